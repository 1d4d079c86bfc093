#include "core/base/proc_fs.h"

#include <fcntl.h>

namespace ix {

int ProcDirFd() {
  // Opened once, never closed: a detached /proc (the container's rootfs
  // removed) stays readable through it. Close-on-exec, so no program
  // started from here inherits it.
  static const int fd = ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  return fd;
}

}  // namespace ix
