// pidfd system calls by number, for everything that holds a process by
// pidfd (the stop, the watch, the plugin's hold on ix-stepd): glibc 2.36's
// <sys/pidfd.h> lacks extern "C". Both return -1 with errno on failure
// (ENOSYS on kernels older than 5.3 / 5.1).
#pragma once

#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

namespace ix {

// pidfd_open(2): a descriptor that pins the process `pid` names now.
inline int PidfdOpen(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0u)); }

// pidfd_send_signal(2): `sig` to exactly the process behind `pidfd`.
inline int PidfdSendSignal(int pidfd, int sig) {
  return static_cast<int>(::syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0u));
}

}  // namespace ix
