#include "core/process/spawn_child.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ix {
namespace {

// Everything here runs in the child between fork and exec: see
// spawn_child.h for why it is all async-signal-safe.

void Report(int fd, ChildStep step, int err, bool fatal, const char* call) noexcept {
  ChildReport r;
  r.step = static_cast<int32_t>(step);
  r.err = err;
  r.fatal = fatal ? 1 : 0;
  for (size_t i = 0; call && call[i] && i + 1 < sizeof r.call; ++i) r.call[i] = call[i];
  ssize_t n;
  do {
    n = ::write(fd, &r, sizeof r);
  } while (n < 0 && errno == EINTR);
}

[[noreturn]] void Fail(const ChildPlan& p, ChildStep step, int err, const char* call = nullptr) noexcept {
  Report(p.report_fd, step, err, true, call);
  ::_exit(127);
}

// Marks every descriptor named in /proc/self/fd (open as `dir`) from 3 up
// close-on-exec, reading it with getdents64 into a stack buffer.
void MarkListedCloexec(int dir) noexcept {
  alignas(8) char buf[4096];
  for (;;) {
    const long n = ::syscall(SYS_getdents64, dir, buf, sizeof buf);
    if (n <= 0) return;
    for (long off = 0; off < n;) {
      unsigned short reclen = 0;
      std::memcpy(&reclen, buf + off + 16, sizeof reclen);  // d_ino(8) d_off(8) d_reclen
      const char* name = buf + off + 19;                    // after d_type
      int fd = 0;
      bool digits = *name != '\0';
      for (const char* c = name; *c; ++c) {
        if (*c < '0' || *c > '9') digits = false;
        else fd = fd * 10 + (*c - '0');
      }
      if (digits && fd > 2 && fd != dir) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
      off += reclen;
    }
  }
}

// Marks every descriptor from 3 up close-on-exec (the report pipe must stay
// usable until execve). close_range where the kernel has it (5.11 for the
// flag), else /proc/self/fd, else every number below RLIMIT_NOFILE.
int MarkAllCloexec() noexcept {
  if (::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) == 0) return 0;
  const int dir = ::open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    MarkListedCloexec(dir);
    ::close(dir);
    return 0;
  }
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return errno;
  const rlim_t limit = std::min<rlim_t>(rl.rlim_cur, rlim_t{1} << 20);
  for (rlim_t fd = 3; fd < limit; ++fd) ::fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC);
  return 0;
}

void ResetSignals(const ChildPlan& p) noexcept {
  // The parent blocked every signal around fork: reset the dispositions
  // while nothing can arrive, then unblock.
  for (int s = 1; s < NSIG; ++s) {
    if (s == SIGKILL || s == SIGSTOP) continue;
    struct sigaction sa {};
    sa.sa_handler = SIG_DFL;
    ::sigaction(s, &sa, nullptr);  // EINVAL for the C library's own signals: fine
  }
  sigset_t none;
  ::sigemptyset(&none);
  if (::sigprocmask(SIG_SETMASK, &none, nullptr) != 0) Fail(p, ChildStep::kSignals, errno);
}

void SetUpDescriptors(const ChildPlan& p) noexcept {
  if (::dup2(p.stdin_fd, 0) < 0 || ::dup2(p.out_fd, 1) < 0 || ::dup2(p.out_fd, 2) < 0) {
    Fail(p, ChildStep::kStdio, errno);
  }
  if (const int err = MarkAllCloexec(); err != 0) Fail(p, ChildStep::kCloseFds, err);
}

void ApplyBinding(const ChildPlan& p) noexcept {
  if (!p.binding) return;
  const char* failed = "binding";
  if (const int err = p.binding->ApplyToSelf(&failed); err != 0) {
    if (p.binding_fatal) Fail(p, ChildStep::kBinding, err, failed);
    Report(p.report_fd, ChildStep::kBinding, err, false, failed);
  }
}

void SwitchCredentials(const ChildPlan& p) noexcept {
  if (!p.switch_credentials) return;
  // Raw system calls: this thread is the whole process now, and the C
  // library's wrappers would try to signal threads that no longer exist.
  if (::syscall(SYS_setgroups, p.group_count, p.groups) != 0) Fail(p, ChildStep::kSetgroups, errno);
  if (::syscall(SYS_setresgid, p.gid, p.gid, p.gid) != 0) Fail(p, ChildStep::kSetgid, errno);
  if (::syscall(SYS_setresuid, p.uid, p.uid, p.uid) != 0) Fail(p, ChildStep::kSetuid, errno);
  uid_t ru = 0, eu = 0, su = 0;
  gid_t rg = 0, eg = 0, sg = 0;
  if (::getresuid(&ru, &eu, &su) != 0 || ::getresgid(&rg, &eg, &sg) != 0) Fail(p, ChildStep::kCredentialCheck, errno);
  if (ru != p.uid || eu != p.uid || su != p.uid || rg != p.gid || eg != p.gid || sg != p.gid) {
    Fail(p, ChildStep::kCredentialCheck, 0);
  }
  // Root must be gone for good: getting it back has to fail.
  if (p.uid != 0 && ::syscall(SYS_setresuid, 0, 0, 0) == 0) Fail(p, ChildStep::kCredentialCheck, 0);
}

void SetDeathSignal(const ChildPlan& p) noexcept {
  if (p.death_signal == 0) return;
  // After the credential change, which would clear it.
  if (::prctl(PR_SET_PDEATHSIG, static_cast<unsigned long>(p.death_signal), 0, 0, 0) != 0) {
    Fail(p, ChildStep::kDeathSignal, errno);
  }
  // A parent that died before the prctl sent nothing: look.
  if (::getppid() != p.parent) Fail(p, ChildStep::kParentGone, 0);
}

// An error after which execvp goes on to the next PATH entry.
bool TryNext(int err) noexcept {
  return err == ENOENT || err == ENOTDIR || err == ESTALE || err == ENODEV || err == ETIMEDOUT;
}

// As execvpe does, but never through a shell: ENOENT-like errors go on to
// the next PATH entry, EACCES is remembered, anything else stops.
[[noreturn]] void ExecFirstCandidate(const ChildPlan& p) noexcept {
  int err = ENOENT;
  bool denied = false;
  for (size_t i = 0; i < p.candidate_count; ++i) {
    ::execve(p.candidates[i], p.argv, p.envp);
    err = errno;
    if (err == EACCES) {
      denied = true;
      continue;
    }
    if (TryNext(err)) continue;
    break;
  }
  if (denied && TryNext(err)) err = EACCES;
  Fail(p, ChildStep::kExec, err);
}

}  // namespace

[[noreturn]] void ChildMain(const ChildPlan& p) noexcept {
  ResetSignals(p);
  if (::setpgid(0, 0) != 0) Fail(p, ChildStep::kProcessGroup, errno);
  SetUpDescriptors(p);
  ApplyBinding(p);
  SwitchCredentials(p);
  if (p.cwd && ::chdir(p.cwd) != 0) Fail(p, ChildStep::kChdir, errno);
  if (!p.cwd && p.cwd_fd >= 0 && ::fchdir(p.cwd_fd) != 0) Fail(p, ChildStep::kChdir, errno);
  SetDeathSignal(p);
  ExecFirstCandidate(p);
}

}  // namespace ix
