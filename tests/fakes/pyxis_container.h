// "enroot start" in the Pyxis double: in the helper child (the job user),
// new user and mount namespaces, the mounts enroot's default fstab gives,
// --container-mounts, and pivot_root into the rootfs.
#pragma once

#include <string>
#include <vector>

#include "pyxis_types.h"

namespace ixfake::pyxis {

// Everything "enroot start" does to the namespaces, in the helper child:
// unshares a mount namespace (and a user namespace unless privileged, with
// the user mapped to 0 under args.remap_root, else to itself), mounts into
// `rootfs`, remounts it read-only under args.readonly and pivots into it.
// Appends the namespace fds to `fds` (user ns first when there is one, then
// mnt); "" or why not.
std::string StartContainer(const Job& job, const Args& args, bool privileged, const std::string& rootfs,
                           std::vector<int>& fds);

}  // namespace ixfake::pyxis
