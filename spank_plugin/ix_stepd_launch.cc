#include "spank_plugin/ix_stepd_launch.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "core/base/file_text.h"
#include "core/process/pidfd.h"

namespace ix {
namespace {

std::string Errno(int e) { return std::strerror(e); }

// What the vfork child reports back through shared memory. Volatile: the
// compiler sees no write to it on the parent's path (the child's happen
// while the parent is suspended), and clang at -O2 and above did keep the
// parent's reads in registers, so a failed exec looked like a start.
struct ChildError {
  const char* volatile call = nullptr;
  volatile int err = 0;
};

[[noreturn]] void ChildFail(ChildError* out, const char* call) {
  out->call = call;
  out->err = errno;
  ::_exit(127);
}

}  // namespace

Result<int> OpenStepdExe(const std::string& stepd) {
  const int fd = ::open(stepd.c_str(), O_PATH | O_CLOEXEC);
  struct stat st{};
  if (fd < 0 || ::fstat(fd, &st) != 0) {
    const int e = errno;
    if (fd >= 0) ::close(fd);
    return Error{"cannot open ix-stepd " + stepd + ": " + Errno(e) + " (plugstack.conf: stepd=PATH)"};
  }
  if (!S_ISREG(st.st_mode) || (st.st_mode & 0111) == 0) {
    ::close(fd);
    return Error{"ix-stepd " + stepd + " is not an executable regular file (plugstack.conf: stepd=PATH)"};
  }
  return fd;
}

Result<StepdHandles> OpenStepdHandles(const std::string& stepd, const std::string& run_dir) {
  Result<int> exe = OpenStepdExe(stepd);
  if (!exe) return exe.error();
  StepdHandles h;
  h.exe_fd = exe.value();
  h.run_dir_fd = ::open(run_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (h.run_dir_fd < 0) {
    const int e = errno;
    CloseStepdHandles(h);
    return Error{"cannot open the run directory " + run_dir + ": " + Errno(e)};
  }
  return h;
}

void CloseStepdHandles(StepdHandles& h) {
  for (int fd : {h.exe_fd, h.run_dir_fd, h.agent_fd}) {
    if (fd >= 0) ::close(fd);
  }
  h = StepdHandles{};
}

int ConnectAgentSocket(const std::string& path) {
  sockaddr_un addr{};
  if (path.empty() || path.size() >= sizeof addr.sun_path) return -1;
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size());
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

Result<LaunchedStepd> LaunchStepd(const StepdHandles& h, const std::vector<std::string>& argv, char* const* envp) {
  if (h.exe_fd < 0 || h.run_dir_fd < 0 || argv.empty()) return Error{"ix-stepd: no descriptors to start it from"};
  // The run directory is the job user's by now: a FIFO planted at stepd.log
  // must not block this task for ever (no reader), so O_NONBLOCK, and only
  // a regular file is taken.
  const int log = ::openat(h.run_dir_fd, "stepd.log",
                           O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  if (log < 0) return Error{"cannot open stepd.log in the run directory: " + Errno(errno)};
  struct stat log_st{};
  if (::fstat(log, &log_st) != 0 || !S_ISREG(log_st.st_mode)) {
    ::close(log);
    return Error{"cannot open stepd.log in the run directory: not a regular file"};
  }
  ::fcntl(log, F_SETFL, O_WRONLY | O_APPEND);
  int in[2], ready[2];
  if (::pipe2(in, O_CLOEXEC) != 0) {
    ::close(log);
    return Error{"cannot create a pipe: " + Errno(errno)};
  }
  ::close(in[1]);  // stdin: at its end at once
  if (::pipe2(ready, O_CLOEXEC) != 0) {
    ::close(log);
    ::close(in[0]);
    return Error{"cannot create a pipe: " + Errno(errno)};
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // The fds move up first, out of the way of the numbers they go to.
  // volatile: read after vfork (the child shares this frame; GCC 14 and
  // later warn, -Wclobbered, of such variables kept in registers).
  volatile const int exe = ::fcntl(h.exe_fd, F_DUPFD_CLOEXEC, 10);
  volatile const int run = ::fcntl(h.run_dir_fd, F_DUPFD_CLOEXEC, 10);
  volatile const int rw = ::fcntl(ready[1], F_DUPFD_CLOEXEC, 10);
  volatile const int lg = ::fcntl(log, F_DUPFD_CLOEXEC, 10);
  volatile const int ir = ::fcntl(in[0], F_DUPFD_CLOEXEC, 10);
  volatile const int agent = h.agent_fd >= 0 ? ::fcntl(h.agent_fd, F_DUPFD_CLOEXEC, 10) : -1;
  for (int fd : {log, in[0], ready[1]}) ::close(fd);
  ChildError child_error;
  // vfork: this task is a copy of slurmstepd, whose page tables a fork
  // would copy for nothing. The child only makes system calls.
  const pid_t pid = (exe < 0 || run < 0 || rw < 0 || lg < 0 || ir < 0) ? -1 : ::vfork();
  if (pid == 0) {
    if (::dup2(ir, 0) < 0 || ::dup2(lg, 1) < 0 || ::dup2(lg, 2) < 0) ChildFail(&child_error, "dup2");
    if (::dup2(rw, kStepdReadyFd) < 0 || ::dup2(run, kStepdRunDirFd) < 0) ChildFail(&child_error, "dup2");
    if (::dup2(exe, kStepdRunDirFd + 1) < 0) ChildFail(&child_error, "dup2");
    ::fcntl(kStepdRunDirFd + 1, F_SETFD, FD_CLOEXEC);  // an ELF needs no /dev/fd/N after the exec
    if (agent >= 0 && ::dup2(agent, kStepdAgentFd) < 0) ChildFail(&child_error, "dup2");
    ::syscall(SYS_close_range, agent >= 0 ? kStepdAgentFd + 1 : kStepdAgentFd, ~0U, 0);
    ::syscall(SYS_execveat, kStepdRunDirFd + 1, "", args.data(), envp, AT_EMPTY_PATH);
    ChildFail(&child_error, "execute");
  }
  const int fork_errno = errno;
  for (int fd : {exe, run, rw, lg, ir, agent}) {
    if (fd >= 0) ::close(fd);
  }
  if (pid < 0 || child_error.call) {
    ::close(ready[0]);
    if (pid > 0) {
      while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
      }
    }
    const int e = pid < 0 ? fork_errno : child_error.err;
    return Error{std::string("cannot ") + (pid < 0 ? "start" : child_error.call) + " ix-stepd: " + Errno(e)};
  }
  return LaunchedStepd{pid, ready[0]};
}

std::string ReadReadyAnswer(int fd) {
  std::string answer;
  char buf[512];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    answer.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  while (!answer.empty() && answer.back() == '\n') answer.pop_back();
  return answer;
}

Status WaitForStepd(int run_dir_fd, std::chrono::steady_clock::time_point deadline) {
  int pidfd = -1;
  Status result = Ok{};
  for (;;) {
    int err = 0;
    const std::string state = ReadFileTextAt(run_dir_fd, "state", &err, 4096);
    if (state.rfind("ready", 0) == 0) break;
    if (state.rfind("failed", 0) == 0) {
      result = Error{"the servers failed to start (task 0 reports the reason)"};
      break;
    }
    if (pidfd < 0) {
      const std::string pid_text = ReadFileTextAt(run_dir_fd, "stepd.pid", &err, 64);
      const long pid = err ? 0 : std::strtol(pid_text.c_str(), nullptr, 10);
      if (pid > 1) pidfd = PidfdOpen(static_cast<pid_t>(pid));
    }
    if (pidfd >= 0) {
      struct pollfd p{pidfd, POLLIN, 0};
      if (::poll(&p, 1, 20) > 0) {
        // Gone: one last look, as it may have written "ready" just before.
        const std::string last = ReadFileTextAt(run_dir_fd, "state", &err, 4096);
        if (last.rfind("ready", 0) != 0) result = Error{"ix-stepd exited before the servers were ready"};
        break;
      }
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (std::chrono::steady_clock::now() > deadline) {
      result = Error{"timed out waiting for the servers (task 0)"};
      break;
    }
  }
  if (pidfd >= 0) ::close(pidfd);
  return result;
}

}  // namespace ix
