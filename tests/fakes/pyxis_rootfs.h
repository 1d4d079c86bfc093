// The container's root filesystem on the host: "enroot create" (a copy of
// the image directory, owned by the job user) and "enroot remove -f" (a
// recursive delete that follows no symlink and enters no mount).
#pragma once

#include <string>

#include "pyxis_types.h"

namespace ixfake::pyxis {

// Copies args.image (a rootfs directory: files, directories and symlinks
// only) to `rootfs`, created 0700 and then given the image root's mode.
// With `reuse`, an existing rootfs directory (a named container) is kept as
// it is. Runs as the job user (in a helper).
std::string CreateRootfs(const Args& args, const std::string& rootfs, bool reuse);

// Removes the tree `rootfs` as the job user (in a helper, pyxis_helper.h);
// a missing one is no error, a mount inside it is left and reported.
std::string RemoveRootfs(const Job& job, const std::string& rootfs);

}  // namespace ixfake::pyxis
