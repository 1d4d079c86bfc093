// The container side of a sweep (submitter/sweep/container_args.has the Pyxis
// options themselves): what is checked before anything is submitted, what
// the submitter says of each image, and the srun argv each entry's task
// runs. docs/SWEEP.md.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/matrix/matrix_config.h"
#include "core/base/result.h"
#include "submitter/sweep/sweep_files.h"

namespace ix {

// Whether a path exists: the file system in the programs, a set in tests.
using PathExists = std::function<bool(const std::string&)>;
bool PathExistsOnDisk(const std::string& path);

// The distinct images of these config keys, in first-seen order, each
// checked with ParseImageRef. An error is located at its config row:
// "FILE:LINE:COL: KEY: field 'image': 'X' is not a container image reference: ...".
Result<std::vector<std::string>> ImagesOfKeys(const MasterConfig& config, const std::vector<std::string>& keys);

// Before submission, for a sweep whose steps run in containers: every
// entry's image parses (located at its row), each entry's result directory
// and model mount can be carried by --container-mounts, and with a
// --model-dir every absolute MODEL_PATH of the recipes lies inside it (the
// engine reads its checkpoint there, and nothing else is mounted).
Status CheckSweepContainers(const SweepManifest& m, const MasterConfig& config);

// One line per distinct image of a container sweep: the squash file its
// steps will use, or why they import the image through Pyxis.
std::vector<std::string> DescribeImages(const SweepManifest& m, const PathExists& exists);

// The argv of entry `e`'s step: srun --ntasks=1 --gres=gpu:G (across nodes:
// srun -NN --ntasks-per-node=1 --kill-on-bad-exit=1 --gres=gpu:G, G per
// node), Pyxis's options when the sweep uses containers and the entry has an
// image, the plugin's --inferencex-* options (with the row's KV offload
// tier and its DRAM, --inferencex-kv-offload[-dram-gb]), the client (`client_argv`,
// entry_client.h). Across nodes the client is wrapped by HeadOnly, so it
// runs on the head only.
std::vector<std::string> StepSrunArgv(const SweepManifest& m, const PlannedEntry& e, const PathExists& exists,
                                      const std::vector<std::string>& client_argv);

// `client` run on a step's head only: /bin/sh -c SCRIPT ix-head-only
// CLIENT..., where the fixed SCRIPT exits 0 on a node whose SLURM_NODEID
// or IX_NODE_RANK is not 0 and execs CLIENT otherwise. The client's words
// are the script's arguments ("$@"), never shell text; /bin/sh is in every
// container image, where ixsubmit is not.
std::vector<std::string> HeadOnly(const std::vector<std::string>& client);

}  // namespace ix
