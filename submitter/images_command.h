// `ixsubmit images list|import`: the container images of a selection of
// config rows (the sweep's selection flags) or given by name, and their
// squash files in the site's squash directory (InferenceX's naming,
// submitter/sweep/container_args). `import` imports each missing one once, on a
// node (where enroot is), through `srun -N1 -n1 flock FILE.lock enroot
// import -o FILE docker://REF`: the lock beside the file serialises
// concurrent imports of one image. docs/SWEEP.md.
#pragma once

#include <string>
#include <vector>

#include "submitter/sweep/sweep_files.h"

namespace ix {

// The argv that imports `image` into `squash_file` on one node: srun with
// the partition, account and time of `s` (the rest of it unused), then
// flock on squash_file + ".lock" around enroot import. No shell.
std::vector<std::string> ImportArgv(const std::string& image, const std::string& squash_file, const SubmitSettings& s);

int RunImagesCommand(const std::vector<std::string>& args);

}  // namespace ix
