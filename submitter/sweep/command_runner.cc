#include "submitter/sweep/command_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string_view>
#include <thread>

#include "core/base/paths.h"
#include "core/base/text.h"
#include "core/base/unique_fd.h"
#include "core/process/process.h"

namespace ix {
namespace {

std::string Quote(std::string_view s) { return "'" + std::string(s) + "'"; }

// The milliseconds left until a fixed end, never negative.
class Deadline {
 public:
  explicit Deadline(std::chrono::milliseconds timeout) : end_(std::chrono::steady_clock::now() + timeout) {}
  int64_t LeftMs() const {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end_ - std::chrono::steady_clock::now());
    return std::max<int64_t>(0, left.count());
  }

 private:
  std::chrono::steady_clock::time_point end_;
};

// What RunCommand refuses before starting anything.
Status CheckCommand(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  if (argv.empty() || argv[0].empty()) return Error{"no program given (argv is empty)"};
  for (const std::string& a : argv) {
    if (a.find('\0') != std::string::npos) return Error{Quote(argv[0]) + ": an argument holds a NUL byte"};
  }
  for (const std::string& e : env) {
    if (e.find('=') == std::string::npos || e.find('\0') != std::string::npos) {
      return Error{Quote(argv[0]) + ": environment entry '" + e + "': expected NAME=VALUE"};
    }
  }
  return Ok{};
}

// A close-on-exec pipe whose ends are above 2, so dup2 onto stdout/stderr
// in the child never meets an end that already is 1 or 2.
bool MakePipe(UniqueFd& read_end, UniqueFd& write_end) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return false;
  for (int& end : p) {
    if (end <= 2) {
      const int moved = ::fcntl(end, F_DUPFD_CLOEXEC, 3);
      ::close(end);
      end = moved;
    }
  }
  read_end.reset(p[0]);
  write_end.reset(p[1]);
  return read_end.valid() && write_end.valid();
}

// posix_spawn's file actions and attributes for the child, destroyed with
// this: stdin from /dev/null, stdout and stderr onto the pipes, nothing else
// inherited, its own process group, default signal handling.
class SpawnSetup {
 public:
  SpawnSetup(int out_fd, int err_fd) {
    posix_spawn_file_actions_init(&actions_);
    posix_spawnattr_init(&attr_);
    posix_spawn_file_actions_addopen(&actions_, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions_, out_fd, 1);
    posix_spawn_file_actions_adddup2(&actions_, err_fd, 2);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
    // Descriptors the caller opened without O_CLOEXEC (e.g. an SQLite file)
    // must not leak into sbatch.
    posix_spawn_file_actions_addclosefrom_np(&actions_, 3);
#endif
    // Its own process group, so a timeout kills what it started too, and a
    // Ctrl-C at the terminal reaches the submitter, which decides; default
    // signal handling and an empty mask whatever the caller has.
    sigset_t empty, defaults;
    sigemptyset(&empty);
    sigfillset(&defaults);
    sigdelset(&defaults, SIGKILL);
    sigdelset(&defaults, SIGSTOP);
    posix_spawnattr_setflags(&attr_, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    posix_spawnattr_setpgroup(&attr_, 0);
    posix_spawnattr_setsigmask(&attr_, &empty);
    posix_spawnattr_setsigdefault(&attr_, &defaults);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions_);
    posix_spawnattr_destroy(&attr_);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;

  const posix_spawn_file_actions_t* actions() const { return &actions_; }
  const posix_spawnattr_t* attr() const { return &attr_; }

 private:
  posix_spawn_file_actions_t actions_;
  posix_spawnattr_t attr_;
};

// Starts the first of `candidates` that runs. As execvp, but with the PATH
// of `env`: ENOENT-like errors go on to the next, EACCES is remembered,
// anything else stops. The error names argv[0], and `path_var` when
// argv[0] was looked up in it.
Result<pid_t> SpawnFirst(const std::vector<std::string>& candidates, const std::vector<std::string>& argv,
                         const std::vector<std::string>& env, const std::string& path_var, int out_fd, int err_fd) {
  std::vector<char*> cargv, cenv;
  for (const std::string& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const std::string& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);
  const SpawnSetup setup(out_fd, err_fd);
  int err = ENOENT;
  bool denied = false;
  for (const std::string& cand : candidates) {
    pid_t pid = -1;
    err = ::posix_spawn(&pid, cand.c_str(), setup.actions(), setup.attr(), cargv.data(), cenv.data());
    if (err == 0) return pid;
    if (err == EACCES) {
      denied = true;
      continue;
    }
    if (err == ENOENT || err == ENOTDIR || err == ESTALE || err == ENODEV || err == ETIMEDOUT) continue;
    break;
  }
  if (denied && (err == ENOENT || err == ENOTDIR)) err = EACCES;
  std::string msg = "cannot execute " + Quote(argv[0]) + ": " + std::strerror(err);
  if (argv[0].find('/') == std::string::npos) msg += " (PATH=" + path_var + ")";
  return Error{msg};
}

// Reads what is there without blocking; false at end of file.
bool Drain(int fd, std::string& into) {
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      into.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n == 0) return false;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK;  // any other error ends the stream
  }
}

// Reads both pipes until they close, into `result` (and, with `echo`, onto
// this process's stdout and stderr); false when the deadline came first.
// Both at once: a program that fills stderr while we wait on stdout (or
// the other way round) would otherwise block forever.
bool ReadOutput(UniqueFd& out_r, UniqueFd& err_r, const Deadline& deadline, bool echo, CommandOutput& result) {
  ::fcntl(out_r.get(), F_SETFL, ::fcntl(out_r.get(), F_GETFL) | O_NONBLOCK);
  ::fcntl(err_r.get(), F_SETFL, ::fcntl(err_r.get(), F_GETFL) | O_NONBLOCK);
  while (out_r.valid() || err_r.valid()) {
    const int64_t left = deadline.LeftMs();
    if (left == 0) return false;
    pollfd pfds[2];
    nfds_t n = 0;
    if (out_r.valid()) pfds[n++] = {out_r.get(), POLLIN, 0};
    if (err_r.valid()) pfds[n++] = {err_r.get(), POLLIN, 0};
    const int rc = ::poll(pfds, n, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (rc < 0 && errno != EINTR) break;
    if (rc <= 0) continue;
    for (nfds_t i = 0; i < n; ++i) {
      if (pfds[i].revents == 0) continue;
      const bool is_out = pfds[i].fd == out_r.get();
      UniqueFd& fd = is_out ? out_r : err_r;
      std::string& into = is_out ? result.out : result.err;
      const size_t before = into.size();
      const bool open = Drain(fd.get(), into);
      if (echo && into.size() > before) {
        std::FILE* to = is_out ? stdout : stderr;
        std::fwrite(into.data() + before, 1, into.size() - before, to);
        std::fflush(to);
      }
      if (!open) fd.reset();
    }
  }
  return true;
}

// Waits for the exit itself, still within the deadline (a program may close
// its output and go on): its wait status, or nullopt when the deadline came
// first.
Result<std::optional<int>> WaitForExit(pid_t pid, const Deadline& deadline, const std::string& name) {
  auto nap = std::chrono::milliseconds(1);
  for (;;) {
    int status = 0;
    const pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) return std::optional<int>(status);
    if (w < 0 && errno != EINTR) return Error{Quote(name) + ": waitpid: " + std::strerror(errno)};
    if (deadline.LeftMs() == 0) return std::optional<int>();
    std::this_thread::sleep_for(nap);
    nap = std::min(nap * 2, std::chrono::milliseconds(50));
  }
}

// The last `n` bytes of `s`, from a line start where there is one.
std::string Tail(const std::string& s, size_t n) {
  if (s.size() <= n) return std::string(Trim(s));
  std::string_view t(s);
  t = t.substr(s.size() - n);
  const size_t nl = t.find('\n');
  if (nl != std::string_view::npos && nl + 1 < t.size()) t = t.substr(nl + 1);
  return "..." + std::string(Trim(t));
}

// Kills the process group of a program past its time and reaps it; the
// error says so, with the end of what it wrote to stderr.
Error KillAfterTimeout(pid_t pid, const std::string& name, std::chrono::milliseconds timeout, const std::string& err) {
  ::kill(-pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const int64_t ms = timeout.count();
  std::string msg = Quote(name) + " did not finish within " +
                    (ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms") +
                    " and was killed";
  if (!Trim(err).empty()) msg += "; its stderr ended with: " + Tail(err, 2000);
  return Error{msg};
}

}  // namespace

std::string CommandOutput::Describe() const {
  if (signal != 0) return "killed by signal " + std::to_string(signal) + " (" + ::strsignal(signal) + ")";
  return "exit status " + std::to_string(exit_code);
}

Result<CommandOutput> RunCommand(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                                 std::chrono::milliseconds timeout, bool echo) {
  if (Status s = CheckCommand(argv, env); !s) return s.error();
  const std::string path_var = FindEnv(env, "PATH").value_or("");
  const std::vector<std::string> candidates = ExecCandidates(argv[0], path_var);
  if (candidates.empty()) {
    return Error{"cannot execute " + Quote(argv[0]) + ": PATH is not set in its environment"};
  }
  UniqueFd out_r, out_w, err_r, err_w;
  if (!MakePipe(out_r, out_w) || !MakePipe(err_r, err_w)) {
    return Error{"cannot run " + Quote(argv[0]) + ": pipe: " + std::strerror(errno)};
  }
  Result<pid_t> pid = SpawnFirst(candidates, argv, env, path_var, out_w.get(), err_w.get());
  // Only the child writes now: our ends must close for the reads to end.
  out_w.reset();
  err_w.reset();
  if (!pid) return pid.error();

  const Deadline deadline(timeout);
  CommandOutput result;
  std::optional<int> status;
  if (ReadOutput(out_r, err_r, deadline, echo, result)) {
    Result<std::optional<int>> waited = WaitForExit(pid.value(), deadline, argv[0]);
    if (!waited) return waited.error();
    status = waited.value();
  }
  if (!status) return KillAfterTimeout(pid.value(), argv[0], timeout, result.err);
  if (WIFSIGNALED(*status)) {
    result.signal = WTERMSIG(*status);
    result.exit_code = -1;
  } else {
    result.exit_code = WEXITSTATUS(*status);
  }
  return result;
}

}  // namespace ix
