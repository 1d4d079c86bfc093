// /proc, read the same way by everything that looks at processes: through
// one directory descriptor, never by path.
#pragma once

namespace ix {

// The /proc that every reader of processes uses: a directory descriptor
// opened on first use and kept for the life of the process (-1 when /proc
// cannot be opened). A supervisor in a container calls it at start: when the
// container's rootfs is removed under it (Pyxis without --container-name),
// its /proc mount is detached but still readable through the descriptor.
int ProcDirFd();

}  // namespace ix
