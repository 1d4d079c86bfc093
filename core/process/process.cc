#include "core/process/process.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>
#include <thread>
#include <tuple>

#include "core/node/topology.h"

extern char** environ;

namespace ix {
namespace {

std::string Errno(int err) { return std::strerror(err); }

// pidfd system calls by number: glibc 2.36's <sys/pidfd.h> lacks extern "C".
int PidfdOpen(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0u)); }
int PidfdSendSignal(int pidfd, int sig) {
  return static_cast<int>(::syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0u));
}

// Closes a descriptor when it goes out of scope.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { Reset(); }
  void Reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

// Moves a descriptor to 3 or above (close-on-exec), so that dup2 onto
// 0/1/2 in the child never has source == target.
int AboveStdio(int fd) {
  if (fd < 0 || fd > 2) return fd;
  const int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
  const int saved = errno;
  ::close(fd);
  errno = saved;
  return moved;
}

// ---- the child, between fork and exec ---------------------------------------
// Everything here is async-signal-safe: system calls on data prepared by the
// parent, no allocation, no locks, no stdio.

// The steps of the child, in order, as the report names them.
enum class Step : int32_t {
  kSignals = 1,
  kProcessGroup,
  kStdio,
  kCloseFds,
  kBinding,
  kSetgroups,
  kSetgid,
  kSetuid,
  kCredentialCheck,
  kChdir,
  kDeathSignal,
  kParentGone,
  kExec,
};

// One record on the report pipe (smaller than PIPE_BUF, so written whole).
struct ChildReport {
  int32_t step = 0;
  int32_t err = 0;
  int32_t fatal = 0;  // 1: the child exits after this; 0: a note, it goes on
  char call[36] = {};
};

// What the child does, as plain pointers into the parent's prepared data.
struct ChildPlan {
  int report_fd = -1, stdin_fd = -1, out_fd = -1;
  const char* cwd = nullptr;  // nullptr = stay
  int cwd_fd = -1;            // else fchdir here when >= 0
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  const char* const* candidates = nullptr;
  size_t candidate_count = 0;
  bool switch_credentials = false;
  uid_t uid = 0;
  gid_t gid = 0;
  const gid_t* groups = nullptr;
  size_t group_count = 0;
  const PreparedBinding* binding = nullptr;
  bool binding_fatal = true;
  int death_signal = 0;
  pid_t parent = 0;
};

void Report(int fd, Step step, int err, bool fatal, const char* call) noexcept {
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

[[noreturn]] void Fail(const ChildPlan& p, Step step, int err, const char* call = nullptr) noexcept {
  Report(p.report_fd, step, err, true, call);
  ::_exit(127);
}

// Marks every descriptor from 3 up close-on-exec (the report pipe must stay
// usable until execve). close_range where the kernel has it (5.11 for the
// flag), else /proc/self/fd read with getdents64 into a stack buffer, else
// every number below RLIMIT_NOFILE.
int MarkAllCloexec() noexcept {
  if (::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) == 0) return 0;
  const int dir = ::open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    alignas(8) char buf[4096];
    for (;;) {
      const long n = ::syscall(SYS_getdents64, dir, buf, sizeof buf);
      if (n <= 0) break;
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
    ::close(dir);
    return 0;
  }
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return errno;
  const rlim_t limit = std::min<rlim_t>(rl.rlim_cur, rlim_t{1} << 20);
  for (rlim_t fd = 3; fd < limit; ++fd) ::fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC);
  return 0;
}

[[noreturn]] void ChildMain(const ChildPlan& p) noexcept {
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
  if (::sigprocmask(SIG_SETMASK, &none, nullptr) != 0) Fail(p, Step::kSignals, errno);

  if (::setpgid(0, 0) != 0) Fail(p, Step::kProcessGroup, errno);
  if (::dup2(p.stdin_fd, 0) < 0 || ::dup2(p.out_fd, 1) < 0 || ::dup2(p.out_fd, 2) < 0) {
    Fail(p, Step::kStdio, errno);
  }
  if (const int err = MarkAllCloexec(); err != 0) Fail(p, Step::kCloseFds, err);

  if (p.binding) {
    const char* failed = "binding";
    if (const int err = p.binding->ApplyToSelf(&failed); err != 0) {
      if (p.binding_fatal) Fail(p, Step::kBinding, err, failed);
      Report(p.report_fd, Step::kBinding, err, false, failed);
    }
  }

  if (p.switch_credentials) {
    // Raw system calls: this thread is the whole process now, and the C
    // library's wrappers would try to signal threads that no longer exist.
    if (::syscall(SYS_setgroups, p.group_count, p.groups) != 0) Fail(p, Step::kSetgroups, errno);
    if (::syscall(SYS_setresgid, p.gid, p.gid, p.gid) != 0) Fail(p, Step::kSetgid, errno);
    if (::syscall(SYS_setresuid, p.uid, p.uid, p.uid) != 0) Fail(p, Step::kSetuid, errno);
    uid_t ru = 0, eu = 0, su = 0;
    gid_t rg = 0, eg = 0, sg = 0;
    if (::getresuid(&ru, &eu, &su) != 0 || ::getresgid(&rg, &eg, &sg) != 0) Fail(p, Step::kCredentialCheck, errno);
    if (ru != p.uid || eu != p.uid || su != p.uid || rg != p.gid || eg != p.gid || sg != p.gid) {
      Fail(p, Step::kCredentialCheck, 0);
    }
    if (p.uid != 0 && ::syscall(SYS_setresuid, 0, 0, 0) == 0) Fail(p, Step::kCredentialCheck, 0);
  }

  if (p.cwd && ::chdir(p.cwd) != 0) Fail(p, Step::kChdir, errno);
  if (!p.cwd && p.cwd_fd >= 0 && ::fchdir(p.cwd_fd) != 0) Fail(p, Step::kChdir, errno);

  if (p.death_signal != 0) {
    // After the credential change, which would clear it.
    if (::prctl(PR_SET_PDEATHSIG, static_cast<unsigned long>(p.death_signal), 0, 0, 0) != 0) {
      Fail(p, Step::kDeathSignal, errno);
    }
    if (::getppid() != p.parent) Fail(p, Step::kParentGone, 0);
  }

  // As execvpe does, but never through a shell: ENOENT-like errors go on to
  // the next PATH entry, EACCES is remembered, anything else stops.
  int err = ENOENT;
  bool denied = false;
  for (size_t i = 0; i < p.candidate_count; ++i) {
    ::execve(p.candidates[i], p.argv, p.envp);
    err = errno;
    if (err == EACCES) {
      denied = true;
      continue;
    }
    if (err == ENOENT || err == ENOTDIR || err == ESTALE || err == ENODEV || err == ETIMEDOUT) continue;
    break;
  }
  if (denied && (err == ENOENT || err == ENOTDIR || err == ESTALE || err == ENODEV || err == ETIMEDOUT)) {
    err = EACCES;
  }
  Fail(p, Step::kExec, err);
}

// ---- the parent's side ------------------------------------------------------

std::string DescribeTarget(const PreparedBinding& b) {
  std::string s;
  if (!b.cpus().empty()) s = "CPUs " + FormatIdList(b.cpus());
  if (b.numa()) s += (s.empty() ? "" : ", ") + std::string("NUMA node ") + std::to_string(*b.numa());
  return s.empty() ? "nothing" : s;
}

std::string ReportMessage(const SpawnSpec& spec, const ChildReport& r, const std::string& cwd_note) {
  const std::string err = r.err ? Errno(r.err) : "";
  const std::string who = spec.credentials ? "uid " + std::to_string(spec.credentials->uid) + " gid " +
                                                 std::to_string(spec.credentials->gid)
                                           : "";
  switch (static_cast<Step>(r.step)) {
    case Step::kSignals: return "cannot reset the signal mask: " + err;
    case Step::kProcessGroup: return "cannot start its own process group (setpgid): " + err;
    case Step::kStdio: return "cannot redirect stdin/stdout/stderr: " + err;
    case Step::kCloseFds: return "cannot close the inherited descriptors: " + err;
    case Step::kBinding:
      return "cannot apply the binding (" + DescribeTarget(*spec.binding) + "): " + std::string(r.call) + ": " +
             err + (r.err == EINVAL ? " (outside the cpuset this process may use?)" : "");
    case Step::kSetgroups: return "cannot switch to " + who + ": setgroups: " + err;
    case Step::kSetgid: return "cannot switch to " + who + ": setresgid: " + err;
    case Step::kSetuid: return "cannot switch to " + who + ": setresuid: " + err;
    case Step::kCredentialCheck:
      return "switching to " + who + " did not take effect" + (r.err ? ": " + err : std::string());
    case Step::kChdir:
      return "cannot change to directory '" + (spec.cwd.empty() ? std::string("(descriptor)") : spec.cwd) + "'" +
             cwd_note + ": " + err;
    case Step::kDeathSignal: return "cannot set the parent-death signal (prctl): " + err;
    case Step::kParentGone: return "its parent exited before exec (parent-death signal)";
    case Step::kExec: {
      std::string s = "cannot execute '" + spec.argv[0] + "': " + err;
      if (spec.argv[0].find('/') == std::string::npos) s += " (PATH=" + FindEnv(spec.env, "PATH").value_or("") + ")";
      return s;
    }
  }
  return "failed before exec (step " + std::to_string(r.step) + "): " + err;
}

Status CheckSpec(const SpawnSpec& spec) {
  if (spec.argv.empty() || spec.argv[0].empty()) return Error{"no program given (argv is empty)"};
  for (size_t i = 0; i < spec.argv.size(); ++i) {
    if (spec.argv[i].find('\0') != std::string::npos) {
      return Error{"argv[" + std::to_string(i) + "] holds a NUL byte"};
    }
  }
  for (const std::string& e : spec.env) {
    const size_t eq = e.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Error{"environment entry '" + e + "': expected NAME=VALUE"};
    }
    if (e.find('\0') != std::string::npos) return Error{"environment entry for " + e.substr(0, eq) + " holds a NUL byte"};
  }
  if (spec.cwd.find('\0') != std::string::npos || spec.log_path.find('\0') != std::string::npos) {
    return Error{"a path holds a NUL byte"};
  }
  return Ok{};
}

// Where execve will look for argv[0], in order.
Result<std::vector<std::string>> ExecCandidates(const SpawnSpec& spec) {
  const std::string& name = spec.argv[0];
  if (name.find('/') != std::string::npos) return std::vector<std::string>{name};
  const std::optional<std::string> path = FindEnv(spec.env, "PATH");
  if (!path) return Error{"cannot execute '" + name + "': PATH is not set in its environment"};
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t colon = path->find(':', start);
    std::string dir = path->substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    if (dir.empty()) dir = ".";  // as execvp: an empty entry is the working directory
    out.push_back(dir + (dir.back() == '/' ? "" : "/") + name);
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return out;
}

// The log, appended to: a regular file only, its last component never a
// symlink, opened without blocking. The log directory may be a job user's
// (a result directory): a FIFO planted there would block the open for ever
// (no reader), and a link would be followed, then chowned when switching
// users. Returns the descriptor, or an Error naming the log.
Result<int> OpenLog(const SpawnSpec& spec) {
  const int fd = AboveStdio(::openat(spec.log_dir_fd, spec.log_path.c_str(),
                                     O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY,
                                     0644));
  if (fd < 0) {
    const int e = errno;
    // O_NOFOLLOW says ELOOP; a FIFO without a reader, ENXIO.
    const std::string why = e == ELOOP ? "it is a symbolic link (not followed)"
                            : e == ENXIO ? "it is not a regular file (a FIFO or socket)"
                                         : Errno(e);
    return Error{"cannot open log '" + spec.log_path + "': " + why};
  }
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Error{"cannot open log '" + spec.log_path + "': it is not a regular file"};
  }
  ::fcntl(fd, F_SETFL, O_WRONLY | O_APPEND);  // the server writes to it as to any file
  return fd;
}

Result<SpawnedProcess> SpawnChecked(const SpawnSpec& spec) {
  if (Status s = CheckSpec(spec); !s) return s.error();
  Result<std::vector<std::string>> candidates = ExecCandidates(spec);
  if (!candidates) return candidates.error();

  bool switch_credentials = false;
  if (spec.credentials) {
    const Credentials& c = *spec.credentials;
    if (::geteuid() == 0) {
      switch_credentials = true;
    } else if (c.uid != ::geteuid() || c.gid != ::getegid()) {
      return Error{"cannot run as uid " + std::to_string(c.uid) + " gid " + std::to_string(c.gid) +
                   ": only root can switch users (this is uid " + std::to_string(::geteuid()) + ")"};
    }
  }

  Fd null_fd(AboveStdio(::open("/dev/null", O_RDONLY | O_CLOEXEC | O_NOCTTY)));
  if (null_fd.fd < 0) return Error{"cannot open /dev/null: " + Errno(errno)};
  Fd out_fd(-1);
  if (spec.log_path.empty()) {
    out_fd.fd = AboveStdio(::open("/dev/null", O_WRONLY | O_CLOEXEC | O_NOCTTY));
    if (out_fd.fd < 0) return Error{"cannot open /dev/null: " + Errno(errno)};
  } else {
    Result<int> log = OpenLog(spec);
    if (!log) return log.error();
    out_fd.fd = log.value();
    if (switch_credentials &&
        ::fchown(out_fd.fd, spec.credentials->uid, spec.credentials->gid) != 0) {
      return Error{"cannot give log '" + spec.log_path + "' to uid " + std::to_string(spec.credentials->uid) +
                   ": " + Errno(errno)};
    }
  }
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return Error{"cannot create a pipe: " + Errno(errno)};
  Fd report_read(AboveStdio(pipe_fds[0]));
  Fd report_write(AboveStdio(pipe_fds[1]));
  if (report_read.fd < 0 || report_write.fd < 0) return Error{"cannot create a pipe: " + Errno(errno)};

  // Everything the child touches, prepared now.
  std::vector<char*> argv;
  for (const std::string& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const std::string& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  std::vector<const char*> cand;
  for (const std::string& c : candidates.value()) cand.push_back(c.c_str());

  ChildPlan plan;
  plan.report_fd = report_write.fd;
  plan.stdin_fd = null_fd.fd;
  plan.out_fd = out_fd.fd;
  plan.cwd = spec.cwd.empty() ? nullptr : spec.cwd.c_str();
  plan.cwd_fd = spec.cwd_fd;
  plan.argv = argv.data();
  plan.envp = envp.data();
  plan.candidates = cand.data();
  plan.candidate_count = cand.size();
  plan.switch_credentials = switch_credentials;
  if (spec.credentials) {
    plan.uid = spec.credentials->uid;
    plan.gid = spec.credentials->gid;
    plan.groups = spec.credentials->groups.data();
    plan.group_count = spec.credentials->groups.size();
  }
  plan.binding = spec.binding;
  plan.binding_fatal = !spec.binding_best_effort;
  plan.death_signal = spec.parent_death_signal;
  plan.parent = ::getpid();

  sigset_t all, old;
  ::sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  const pid_t pid = ::fork();
  if (pid == 0) ChildMain(plan);
  const int fork_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (pid < 0) return Error{"cannot fork: " + Errno(fork_errno)};
  report_write.Reset();

  const std::string cwd_note = switch_credentials ? " (as uid " + std::to_string(plan.uid) + ")" : "";
  SpawnedProcess out;
  out.name = spec.name;
  out.id.pid = pid;
  std::optional<std::string> fatal;
  for (;;) {
    ChildReport r;
    const ssize_t n = ::read(report_read.fd, &r, sizeof r);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF: the exec happened, or the child is gone
    if (n != static_cast<ssize_t>(sizeof r)) {
      fatal = "short report from the child";
      break;
    }
    r.call[sizeof r.call - 1] = '\0';
    if (r.fatal) {
      fatal = ReportMessage(spec, r, cwd_note);
    } else {
      out.binding_error = ReportMessage(spec, r, cwd_note);
    }
  }
  if (fatal) {
    ::kill(pid, SIGKILL);  // normally it has exited already
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    return Error{*fatal};
  }
  Result<ProcessInfo> info = ReadProcessInfo(pid);
  if (!info) {
    ::kill(pid, SIGKILL);
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    return Error{"started pid " + std::to_string(pid) + " but cannot read its identity: " + info.error().message};
  }
  out.id.start_time = info.value().start_time;
  return out;
}

// ---- /proc ------------------------------------------------------------------



bool Contains(const std::vector<ProcessInfo>& v, const ProcessId& id) {
  return std::any_of(v.begin(), v.end(), [&](const ProcessInfo& p) { return p.id() == id; });
}

std::string Names(const std::vector<ProcessInfo>& v) {
  std::string s;
  for (const ProcessInfo& p : v) s += (s.empty() ? "" : ", ") + p.comm + " (" + std::to_string(p.pid) + ")";
  return s;
}

// The real ProcessSystem.
class RealSystem final : public ProcessSystem {
 public:
  Result<std::vector<ProcessInfo>> Snapshot() override { return ListProcesses(); }
  int Signal(const ProcessId& id, int sig) override {
    if (id.pid <= 1) return ESRCH;
    const int fd = PidfdOpen(id.pid);
    if (fd < 0 && errno != ENOSYS) return errno;
    // With a pidfd the check and the signal are about the same process.
    Result<ProcessInfo> now = ReadProcessInfo(id.pid);
    if (!now || now.value().start_time != id.start_time) {
      if (fd >= 0) ::close(fd);
      return ESRCH;
    }
    int rc = 0;
    if (fd >= 0) {
      rc = PidfdSendSignal(fd, sig) == 0 ? 0 : errno;
      ::close(fd);
    } else {
      rc = ::kill(id.pid, sig) == 0 ? 0 : errno;
    }
    return rc;
  }
  int SignalGroup(pid_t pgid, int sig) override {
    if (pgid <= 1) return ESRCH;
    return ::kill(-pgid, sig) == 0 ? 0 : errno;
  }
  int SignalHeld(int pidfd, int sig) override {
    if (pidfd < 0) return EBADF;
    return PidfdSendSignal(pidfd, sig) == 0 ? 0 : errno;
  }
  bool HeldExited(int pidfd) override {
    struct pollfd p{pidfd, POLLIN, 0};
    return pidfd < 0 || (::poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL)));
  }
  void Reap(pid_t pid) override {
    int status = 0;
    while (::waitpid(pid, &status, WNOHANG) < 0 && errno == EINTR) {
    }
  }
  pid_t Self() override { return ::getpid(); }
  std::chrono::steady_clock::time_point Now() override { return std::chrono::steady_clock::now(); }
  void Sleep(std::chrono::milliseconds d) override { std::this_thread::sleep_for(d); }
};

// One look at the machine for StopTree: the live processes that belong to
// the stop (known identities, members of a group that is still ours, and
// their descendants), with our own zombie children reaped.
class Membership {
 public:
  Membership(const std::vector<ProcessId>& roots, const std::vector<ProcessId>& known) {
    for (const ProcessId& r : roots) {
      if (r.pid > 1) {
        ids_.insert(Key(r));
        groups_.insert(r.pid);
      }
    }
    for (const ProcessId& k : known) {
      if (k.pid > 1) ids_.insert(Key(k));
    }
  }

  // Returns the live members, or an Error when /proc cannot be read.
  Result<std::vector<ProcessInfo>> Scan(ProcessSystem& sys) {
    Result<std::vector<ProcessInfo>> table = sys.Snapshot();
    if (!table) return table.error();
    const pid_t self = sys.Self();
    const std::vector<ProcessInfo>& t = table.value();
    // A group is still ours while one of its members (a zombie counts: it
    // holds the pid) is a process we know: its id cannot have been reused.
    live_groups_.clear();
    for (const ProcessInfo& p : t) {
      if (groups_.count(p.pgid) && ids_.count(Key(p.id()))) live_groups_.insert(p.pgid);
    }
    for (const ProcessInfo& p : t) {
      if (p.pid == self) live_groups_.erase(p.pgid);  // never our own group
    }
    std::set<pid_t> members;
    std::vector<ProcessInfo> out;
    auto take = [&](const ProcessInfo& p) {
      if (p.pid <= 1 || p.pid == self || p.exited() || members.count(p.pid)) return false;
      members.insert(p.pid);
      out.push_back(p);
      return true;
    };
    for (const ProcessInfo& p : t) {
      if (ids_.count(Key(p.id())) || live_groups_.count(p.pgid)) take(p);
    }
    for (size_t i = 0; i < out.size(); ++i) {  // breadth first over children
      const pid_t parent = out[i].pid;
      for (const ProcessInfo& p : t) {
        if (p.ppid == parent) take(p);
      }
    }
    for (const ProcessInfo& p : out) ids_.insert(Key(p.id()));
    for (const ProcessInfo& p : t) {
      if (p.exited() && p.ppid == self && (ids_.count(Key(p.id())) || groups_.count(p.pgid))) sys.Reap(p.pid);
    }
    // Keep only groups that still have live members worth a group signal.
    std::set<pid_t> with_members;
    for (const ProcessInfo& p : out) {
      if (live_groups_.count(p.pgid)) with_members.insert(p.pgid);
    }
    live_groups_ = with_members;
    return out;
  }

  const std::set<pid_t>& live_groups() const { return live_groups_; }

 private:
  static std::pair<pid_t, uint64_t> Key(const ProcessId& id) { return {id.pid, id.start_time}; }
  std::set<std::pair<pid_t, uint64_t>> ids_;
  std::set<pid_t> groups_;
  std::set<pid_t> live_groups_;
};

}  // namespace

// ---- environment ------------------------------------------------------------

std::vector<std::string> CurrentEnvironment() {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  return env;
}

std::vector<std::string> BuildEnvironment(const std::vector<std::string>& base, const EnvList& adds) {
  std::vector<std::string> out;
  std::vector<std::string> names;
  auto set = [&](const std::string& name, const std::string& entry) {
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == name) {
        out[i] = entry;
        return;
      }
    }
    names.push_back(name);
    out.push_back(entry);
  };
  for (const std::string& e : base) {
    const size_t eq = e.find('=');
    set(e.substr(0, eq), e);
  }
  for (const auto& [name, value] : adds) set(name, name + "=" + value);
  return out;
}

std::optional<std::string> FindEnv(const std::vector<std::string>& env, std::string_view name) {
  for (const std::string& e : env) {
    if (e.size() > name.size() && e[name.size()] == '=' && std::string_view(e).substr(0, name.size()) == name) {
      return e.substr(name.size() + 1);
    }
  }
  return std::nullopt;
}

// ---- spawning ---------------------------------------------------------------

Result<SpawnedProcess> Spawn(const SpawnSpec& spec) {
  Result<SpawnedProcess> r = SpawnChecked(spec);
  if (!r && !spec.name.empty()) return Error{spec.name + ": " + r.error().message};
  return r;
}

// ---- the process tree -------------------------------------------------------


std::vector<ProcessInfo> DescendantsIn(const std::vector<ProcessInfo>& table, pid_t root) {
  std::vector<ProcessInfo> out;
  std::set<pid_t> seen{root};
  std::vector<pid_t> frontier{root};
  for (size_t i = 0; i < frontier.size(); ++i) {
    for (const ProcessInfo& p : table) {
      if (p.ppid == frontier[i] && seen.insert(p.pid).second) {
        out.push_back(p);
        frontier.push_back(p.pid);
      }
    }
  }
  return out;
}

Result<std::vector<ProcessInfo>> ListDescendants(pid_t root) {
  Result<std::vector<ProcessInfo>> table = ListProcesses();
  if (!table) return table.error();
  return DescendantsIn(table.value(), root);
}

bool IsRunning(const ProcessId& id) {
  Result<ProcessInfo> p = ReadProcessInfo(id.pid);
  return p && p.value().start_time == id.start_time && !p.value().exited();
}

// ---- stopping ---------------------------------------------------------------

ProcessSystem& RealProcessSystem() {
  static RealSystem system;
  return system;
}

std::string StopReport::Summary() const {
  std::string s = "stopped ";
  std::set<ProcessId, bool (*)(const ProcessId&, const ProcessId&)> all(
      [](const ProcessId& a, const ProcessId& b) { return std::tie(a.pid, a.start_time) < std::tie(b.pid, b.start_time); });
  for (const ProcessInfo& p : terminated) all.insert(p.id());
  for (const ProcessInfo& p : killed) all.insert(p.id());
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.3f", static_cast<double>(elapsed.count()) / 1000.0);
  s += std::to_string(all.size()) + (all.size() == 1 ? " process" : " processes") + " in " + secs + " s";
  if (!terminated.empty()) s += "; SIGTERM: " + Names(terminated);
  if (!killed.empty()) s += "; SIGKILL: " + Names(killed);
  if (!left.empty()) s += "; STILL THERE: " + Names(left);
  for (const std::string& e : errors) s += "; error: " + e;
  return s;
}

namespace {

// StopTree without /proc: see process.h.
void StopBlind(const std::vector<ProcessId>& roots, const std::vector<HeldProcess>& held,
               const StopOptions& options, ProcessSystem& sys, StopReport& report) {
  auto as_info = [](const HeldProcess& h) {
    ProcessInfo p;
    p.pid = h.id.pid;
    p.start_time = h.id.start_time;
    p.comm = h.label;
    return p;
  };
  auto signal_all = [&](int sig, std::vector<ProcessInfo>& into) {
    // Who is alive before the groups' signal, which may end some of them
    // before their own: each of those got `sig`, one way or the other.
    std::vector<const HeldProcess*> alive;
    for (const HeldProcess& h : held) {
      if (h.id.pid > 1 && !sys.HeldExited(h.pidfd)) alive.push_back(&h);
    }
    for (const ProcessId& r : roots) {
      if (r.pid > 1 && r.pid != sys.Self() && sys.SignalGroup(r.pid, sig) == 0 &&
          std::find(report.groups.begin(), report.groups.end(), r.pid) == report.groups.end()) {
        report.groups.push_back(r.pid);
      }
    }
    for (const HeldProcess* h : alive) {
      (void)sys.SignalHeld(h->pidfd, sig);  // ESRCH: its group's signal was first
      if (!Contains(into, h->id)) into.push_back(as_info(*h));
    }
  };
  auto all_gone = [&] {
    return std::all_of(held.begin(), held.end(), [&](const HeldProcess& h) { return sys.HeldExited(h.pidfd); });
  };
  auto wait_until = [&](std::chrono::steady_clock::time_point end) {
    auto delay = std::max(options.poll, std::chrono::milliseconds(1));
    while (!all_gone() && sys.Now() < end) {
      sys.Sleep(std::min(delay, std::chrono::duration_cast<std::chrono::milliseconds>(end - sys.Now()) +
                                    std::chrono::milliseconds(1)));
      delay = std::min(delay * 2, options.max_poll);
    }
  };
  std::vector<ProcessInfo> ignored;
  signal_all(SIGTERM, report.terminated);
  signal_all(SIGCONT, ignored);
  wait_until(sys.Now() + options.grace);
  // The groups may hold processes no pidfd knows: they get the KILL too.
  signal_all(SIGKILL, report.killed);
  wait_until(sys.Now() + options.kill_wait);
  for (const HeldProcess& h : held) {
    if (!sys.HeldExited(h.pidfd)) report.left.push_back(as_info(h));
  }
}

}  // namespace

StopReport StopTree(const std::vector<ProcessId>& roots, const std::vector<ProcessId>& known,
                    const StopOptions& options, ProcessSystem& sys, const std::vector<HeldProcess>& held) {
  StopReport report;
  const auto start = sys.Now();
  Membership membership(roots, known);
  std::vector<ProcessInfo> members;
  auto scan = [&]() -> bool {
    Result<std::vector<ProcessInfo>> m = membership.Scan(sys);
    if (!m) {
      if (report.errors.empty() || report.errors.back() != m.error().message) report.errors.push_back(m.error().message);
      return false;
    }
    members = std::move(m).value();
    return true;
  };
  auto note_group = [&](pid_t g) {
    if (std::find(report.groups.begin(), report.groups.end(), g) == report.groups.end()) report.groups.push_back(g);
  };
  auto term_new = [&]() {
    for (const ProcessInfo& p : members) {
      if (Contains(report.terminated, p.id())) continue;
      if (sys.Signal(p.id(), SIGTERM) == 0) {
        sys.Signal(p.id(), SIGCONT);  // a stopped process acts on TERM only when continued
        report.terminated.push_back(p);
      }
    }
    for (pid_t g : membership.live_groups()) {
      if (sys.SignalGroup(g, SIGTERM) == 0) {
        sys.SignalGroup(g, SIGCONT);
        note_group(g);
      }
    }
  };
  auto kill_all = [&]() {
    for (const ProcessInfo& p : members) {
      if (!Contains(report.killed, p.id()) && sys.Signal(p.id(), SIGKILL) == 0) report.killed.push_back(p);
    }
    for (pid_t g : membership.live_groups()) {
      if (sys.SignalGroup(g, SIGKILL) == 0) note_group(g);
    }
  };
  auto sleep_step = [&](std::chrono::milliseconds& delay, std::chrono::steady_clock::time_point until) {
    const auto now = sys.Now();
    if (now >= until) return;
    auto d = std::min<std::chrono::steady_clock::duration>(delay, until - now);
    sys.Sleep(std::max(std::chrono::milliseconds(1), std::chrono::duration_cast<std::chrono::milliseconds>(d)));
    delay = std::min(delay * 2, options.max_poll);
  };

  bool done = false;
  if (!scan()) {
    StopBlind(roots, held, options, sys, report);
    report.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(sys.Now() - start);
    return report;
  }
  done = members.empty();
  term_new();
  // The grace: look again, signalling anything new, until all are gone.
  const auto grace_end = sys.Now() + options.grace;
  auto delay = std::max(options.poll, std::chrono::milliseconds(1));
  bool lost = false;  // /proc became unreadable during the stop
  while (!done) {
    sleep_step(delay, grace_end);
    if (!scan()) {
      lost = true;
      break;
    }
    done = members.empty();
    if (!done) term_new();
    if (sys.Now() >= grace_end) break;
  }
  if (!done && !lost) {
    const auto kill_end = sys.Now() + options.kill_wait;
    delay = std::max(options.poll, std::chrono::milliseconds(1));
    for (;;) {
      kill_all();
      sleep_step(delay, kill_end);
      if (!scan()) {
        lost = true;
        break;
      }
      if (members.empty()) {
        done = true;
        break;
      }
      if (sys.Now() >= kill_end) break;
    }
    if (!done && !lost) report.left = members;
  }
  if (lost) StopBlind(roots, held, options, sys, report);
  report.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(sys.Now() - start);
  return report;
}

StopReport StopTree(const std::vector<ProcessId>& roots, const std::vector<ProcessId>& known,
                    const StopOptions& options, const std::vector<HeldProcess>& held) {
  return StopTree(roots, known, options, RealProcessSystem(), held);
}

}  // namespace ix
