// Containers for a sweep's steps, the way InferenceX's launch scripts run
// them under Pyxis/enroot: the config row's `image`, optionally mapped to a
// local squash file (InferenceX's naming: `sed 's/[\/:@#]/_/g'` + .sqsh in
// a site directory), the model and result directories mounted at the same
// path, no home mount, the result directory as working directory, the
// image's entrypoint off, no --container-name. docs/SWEEP.md.
//
// Everything here is pure except CheckSrunHasPyxis (runs `srun --help`) and
// ResolveSquashDir (reads the file system), so the argv a step gets is
// tested without Pyxis.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"

namespace ix {

// An image reference split as Docker (and enroot) read it. Invariant: each
// part holds only what its grammar allows (ParseImageRef checks).
struct ImageRef {
  std::string registry;    // "nvcr.io", "localhost:5000"; "" = Docker Hub
  std::string repository;  // "nvidia/vllm", "vllm/vllm-openai"
  std::string tag;         // "25.09-py3"; "" = none
  std::string digest;      // "sha256:..."; "" = none
  bool enroot_form = false;  // written enroot's way: REGISTRY#NAME[:TAG]
};

// `image` as a Docker reference, [REGISTRY/]NAME[:TAG][@DIGEST], or in
// enroot's REGISTRY#NAME[:TAG]. The error says what is wrong and what is
// allowed, without the field name (the caller knows where it came from).
Result<ImageRef> ParseImageRef(std::string_view image);

// What Pyxis's --container-image and enroot's docker:// take for `image`:
// Docker Hub names without a digest as written; another registry as
// REGISTRY#NAME[:TAG]; a digest as REGISTRY#NAME:DIGEST (enroot reads
// neither "nvcr.io/..." without credentials for it nor "@sha256:").
std::string EnrootReference(const std::string& image, const ImageRef& ref);

// InferenceX's squash file name: every '/', ':', '@' and '#' of the image
// as written becomes '_', then ".sqsh". "vllm/vllm-openai:v0.11.0" ->
// "vllm_vllm-openai_v0.11.0.sqsh".
std::string SquashFileName(const std::string& image);
// squash_dir + "/" + SquashFileName(image).
std::string SquashPath(const std::string& squash_dir, const std::string& image);

// Where and how a sweep's steps run in containers: kept in sweep.json, so
// every task of the sweep, and a resumed submitter, use the same.
struct ContainerSettings {
  bool enabled = false;    // false: steps run on the host (--no-container; sweeps from before containers)
  std::string squash_dir;  // absolute; "" = no local squash files: Pyxis imports the image itself
  std::string model_dir;   // absolute; "" = the recipe's MODEL_PATH is the model mount
};

// The host directory mounted for the model: the site's model_dir, else the
// recipe's MODEL_PATH when it is an absolute path, else none ("").
std::string ModelMount(const ContainerSettings& s, const std::string& model_path);

// Pyxis's options for one step: --container-image (the squash file when
// `exists` says it is there, else EnrootReference), --container-mounts
// (model mount, then result_dir, each at its own path),
// --no-container-mount-home, --container-workdir=result_dir,
// --no-container-entrypoint. `image` must have passed ParseImageRef.
std::vector<std::string> ContainerSrunArgs(const ContainerSettings& s, const std::string& image,
                                           const std::string& model_path, const std::string& result_dir,
                                           const std::function<bool(const std::string&)>& exists);

// The squash directory: `flag` (--squash-dir) if given, else
// $IX_SQUASH_DIR, else "" (none). It must be an existing directory; the
// result is absolute. Errors name where the value came from.
Result<std::string> ResolveSquashDir(const std::optional<std::string>& flag);

// A sweep's settings from its flags and environment: with --no-container
// (`no_container`) none; else the squash directory (ResolveSquashDir) and
// the model directory, `model_dir` (--model-dir) else $IX_MODEL_DIR: made
// absolute, not required to exist here (it may be node-local storage).
Result<ContainerSettings> ResolveContainerSettings(bool no_container, const std::optional<std::string>& squash_dir,
                                                   const std::optional<std::string>& model_dir);

// A path Pyxis's --container-mounts=SRC:DST[,...] can carry: absolute,
// without ',' or ':'. `what` names it in the error ("--sweep-dir").
Status CheckMountPath(const std::string& what, const std::string& path);

// `srun --help` lists --container-image (Pyxis is in plugstack.conf). An
// error suggests --no-container. Takes about 20 ms.
Status CheckSrunHasPyxis(const std::vector<std::string>& env);

}  // namespace ix
