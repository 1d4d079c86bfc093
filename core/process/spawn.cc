#include "core/process/spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "core/base/paths.h"
#include "core/base/unique_fd.h"
#include "core/node/topology.h"
#include "core/process/spawn_child.h"

extern char** environ;

namespace ix {
namespace {

std::string Errno(int err) { return std::strerror(err); }

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

// ---- checking the spec, wording the child's reports --------------------------

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
  switch (static_cast<ChildStep>(r.step)) {
    case ChildStep::kSignals: return "cannot reset the signal mask: " + err;
    case ChildStep::kProcessGroup: return "cannot start its own process group (setpgid): " + err;
    case ChildStep::kStdio: return "cannot redirect stdin/stdout/stderr: " + err;
    case ChildStep::kCloseFds: return "cannot close the inherited descriptors: " + err;
    case ChildStep::kBinding:
      return "cannot apply the binding (" + DescribeTarget(*spec.binding) + "): " + std::string(r.call) + ": " +
             err + (r.err == EINVAL ? " (outside the cpuset this process may use?)" : "");
    case ChildStep::kSetgroups: return "cannot switch to " + who + ": setgroups: " + err;
    case ChildStep::kSetgid: return "cannot switch to " + who + ": setresgid: " + err;
    case ChildStep::kSetuid: return "cannot switch to " + who + ": setresuid: " + err;
    case ChildStep::kCredentialCheck:
      return "switching to " + who + " did not take effect" + (r.err ? ": " + err : std::string());
    case ChildStep::kChdir:
      return "cannot change to directory '" + (spec.cwd.empty() ? std::string("(descriptor)") : spec.cwd) + "'" +
             cwd_note + ": " + err;
    case ChildStep::kDeathSignal: return "cannot set the parent-death signal (prctl): " + err;
    case ChildStep::kParentGone: return "its parent exited before exec (parent-death signal)";
    case ChildStep::kExec: {
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

// Where execve will look for argv[0], in order: the PATH of the child's own
// environment, never ours. An empty PATH is one empty entry (the working
// directory), as execvp reads it.
Result<std::vector<std::string>> ProgramCandidates(const SpawnSpec& spec) {
  const std::string& name = spec.argv[0];
  const std::optional<std::string> path = FindEnv(spec.env, "PATH");
  if (!path && name.find('/') == std::string::npos) {
    return Error{"cannot execute '" + name + "': PATH is not set in its environment"};
  }
  return ExecCandidates(name, path && !path->empty() ? std::string_view(*path) : std::string_view("."));
}

// Whether the child switches users: only root can; anyone else may ask
// only for its own uid and gid, which changes nothing.
Result<bool> SwitchesCredentials(const SpawnSpec& spec) {
  if (!spec.credentials) return false;
  if (::geteuid() == 0) return true;
  const Credentials& c = *spec.credentials;
  if (c.uid != ::geteuid() || c.gid != ::getegid()) {
    return Error{"cannot run as uid " + std::to_string(c.uid) + " gid " + std::to_string(c.gid) +
                 ": only root can switch users (this is uid " + std::to_string(::geteuid()) + ")"};
  }
  return false;
}

// ---- the child's descriptors --------------------------------------------------

// The child's descriptors, each >= 3 and close-on-exec: stdin (/dev/null),
// stdout and stderr (the log or /dev/null), and the report pipe.
struct ChildFds {
  UniqueFd in, out, report_read, report_write;
};

Result<UniqueFd> OpenDevNull(int flags) {
  UniqueFd fd(AboveStdio(::open("/dev/null", flags | O_CLOEXEC | O_NOCTTY)));
  if (!fd.valid()) return Error{"cannot open /dev/null: " + Errno(errno)};
  return fd;
}

// The log, appended to: a regular file only, its last component never a
// symlink, opened without blocking. The log directory may be a job user's
// (a result directory): a FIFO planted there would block the open for ever
// (no reader), and a link would be followed, then chowned when switching
// users. Returns the descriptor, or an Error naming the log.
Result<UniqueFd> OpenLog(const SpawnSpec& spec) {
  UniqueFd fd(AboveStdio(::openat(spec.log_dir_fd, spec.log_path.c_str(),
                                  O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY,
                                  0644)));
  if (!fd.valid()) {
    const int e = errno;
    // O_NOFOLLOW says ELOOP; a FIFO without a reader, ENXIO.
    const std::string why = e == ELOOP ? "it is a symbolic link (not followed)"
                            : e == ENXIO ? "it is not a regular file (a FIFO or socket)"
                                         : Errno(e);
    return Error{"cannot open log '" + spec.log_path + "': " + why};
  }
  struct stat st{};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return Error{"cannot open log '" + spec.log_path + "': it is not a regular file"};
  }
  ::fcntl(fd.get(), F_SETFL, O_WRONLY | O_APPEND);  // the server writes to it as to any file
  return fd;
}

// Where stdout and stderr go: the log (given to the user the child runs
// as), or /dev/null.
Result<UniqueFd> OpenOutput(const SpawnSpec& spec, bool switch_credentials) {
  if (spec.log_path.empty()) return OpenDevNull(O_WRONLY);
  Result<UniqueFd> log = OpenLog(spec);
  if (log && switch_credentials && ::fchown(log.value().get(), spec.credentials->uid, spec.credentials->gid) != 0) {
    return Error{"cannot give log '" + spec.log_path + "' to uid " + std::to_string(spec.credentials->uid) + ": " +
                 Errno(errno)};
  }
  return log;
}

Result<ChildFds> OpenChildFds(const SpawnSpec& spec, bool switch_credentials) {
  ChildFds fds;
  Result<UniqueFd> in = OpenDevNull(O_RDONLY);
  if (!in) return in.error();
  fds.in = std::move(in).value();
  Result<UniqueFd> out = OpenOutput(spec, switch_credentials);
  if (!out) return out.error();
  fds.out = std::move(out).value();
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return Error{"cannot create a pipe: " + Errno(errno)};
  fds.report_read.reset(AboveStdio(pipe_fds[0]));
  fds.report_write.reset(AboveStdio(pipe_fds[1]));
  if (!fds.report_read.valid() || !fds.report_write.valid()) return Error{"cannot create a pipe: " + Errno(errno)};
  return fds;
}

// ---- the plan, the fork, the reports ------------------------------------------

// argv, envp and the candidates as the arrays execve takes (argv and envp
// NULL-terminated), pointing into strings that must outlive them.
struct ExecArrays {
  std::vector<char*> argv, envp;
  std::vector<const char*> candidates;
};

ExecArrays PointInto(const SpawnSpec& spec, const std::vector<std::string>& candidates) {
  ExecArrays a;
  for (const std::string& s : spec.argv) a.argv.push_back(const_cast<char*>(s.c_str()));
  a.argv.push_back(nullptr);
  for (const std::string& e : spec.env) a.envp.push_back(const_cast<char*>(e.c_str()));
  a.envp.push_back(nullptr);
  for (const std::string& c : candidates) a.candidates.push_back(c.c_str());
  return a;
}

ChildPlan MakePlan(const SpawnSpec& spec, const ChildFds& fds, const ExecArrays& arrays, bool switch_credentials) {
  ChildPlan plan;
  plan.report_fd = fds.report_write.get();
  plan.stdin_fd = fds.in.get();
  plan.out_fd = fds.out.get();
  plan.cwd = spec.cwd.empty() ? nullptr : spec.cwd.c_str();
  plan.cwd_fd = spec.cwd_fd;
  plan.argv = arrays.argv.data();
  plan.envp = arrays.envp.data();
  plan.candidates = arrays.candidates.data();
  plan.candidate_count = arrays.candidates.size();
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
  return plan;
}

// Forks with every signal blocked, so that none of the parent's handlers
// runs in the child before ChildMain has reset them all.
Result<pid_t> ForkChild(const ChildPlan& plan) {
  sigset_t all, old;
  ::sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  const pid_t pid = ::fork();
  if (pid == 0) ChildMain(plan);
  const int fork_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (pid < 0) return Error{"cannot fork: " + Errno(fork_errno)};
  return pid;
}

// Reads the child's reports until EOF (the exec happened, or the child is
// gone): the message of a fatal one, if any. A note (a best-effort binding
// that failed) goes to out.binding_error.
std::optional<std::string> ReadReports(int fd, const SpawnSpec& spec, const std::string& cwd_note,
                                       SpawnedProcess& out) {
  std::optional<std::string> fatal;
  for (;;) {
    ChildReport r;
    const ssize_t n = ::read(fd, &r, sizeof r);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
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
  return fatal;
}

void KillAndReap(pid_t pid) {
  ::kill(pid, SIGKILL);  // normally it has exited already
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

// Spawn without the spec's name in front of its errors.
Result<SpawnedProcess> SpawnChecked(const SpawnSpec& spec) {
  if (Status s = CheckSpec(spec); !s) return s.error();
  Result<std::vector<std::string>> candidates = ProgramCandidates(spec);
  if (!candidates) return candidates.error();
  Result<bool> switching = SwitchesCredentials(spec);
  if (!switching) return switching.error();
  const bool switch_credentials = switching.value();
  Result<ChildFds> fds = OpenChildFds(spec, switch_credentials);
  if (!fds) return fds.error();

  // Everything the child touches, prepared now.
  const ExecArrays arrays = PointInto(spec, candidates.value());
  const ChildPlan plan = MakePlan(spec, fds.value(), arrays, switch_credentials);
  Result<pid_t> pid = ForkChild(plan);
  if (!pid) return pid.error();
  fds.value().report_write.reset();  // the pipe reads EOF once the child's copy closes at exec

  SpawnedProcess out;
  out.name = spec.name;
  out.id.pid = pid.value();
  const std::string cwd_note = switch_credentials ? " (as uid " + std::to_string(plan.uid) + ")" : "";
  if (std::optional<std::string> fatal = ReadReports(fds.value().report_read.get(), spec, cwd_note, out)) {
    KillAndReap(out.id.pid);
    return Error{*fatal};
  }
  Result<ProcessInfo> info = ReadProcessInfo(out.id.pid);
  if (!info) {
    KillAndReap(out.id.pid);
    return Error{"started pid " + std::to_string(out.id.pid) + " but cannot read its identity: " +
                 info.error().message};
  }
  out.id.start_time = info.value().start_time;
  return out;
}

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

}  // namespace ix
