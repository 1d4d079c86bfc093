#include "submitter/sweep/slurm_cli.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>
#include <thread>

#include "core/process/process.h"

namespace ix {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(start, nl - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    out.push_back(line);
    start = nl + 1;
  }
  return out;
}

// A non-negative decimal number without sign or spaces.
bool ParseCount(std::string_view s, int64_t& out) {
  if (s.empty() || s.size() > 18) return false;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  out = v;
  return true;
}

bool ParseSignedInt(std::string_view s, int& out) {
  bool neg = false;
  if (!s.empty() && s.front() == '-') {
    neg = true;
    s.remove_prefix(1);
  }
  int64_t v = 0;
  if (!ParseCount(s, v) || v > 1'000'000'000) return false;
  out = static_cast<int>(neg ? -v : v);
  return true;
}

std::string Quote(std::string_view s) { return "'" + std::string(s) + "'"; }

// ---- RunCommand's pieces -------------------------------------------------------

// Closes a descriptor when it goes out of scope.
struct Fd {
  int fd = -1;
  Fd() = default;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { Close(); }
  void Close() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

// A close-on-exec pipe whose ends are above 2, so dup2 onto stdout/stderr
// in the child never meets an end that already is 1 or 2.
bool MakePipe(Fd& read_end, Fd& write_end) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return false;
  for (int i = 0; i < 2; ++i) {
    if (p[i] <= 2) {
      const int moved = ::fcntl(p[i], F_DUPFD_CLOEXEC, 3);
      ::close(p[i]);
      p[i] = moved;
    }
  }
  read_end.fd = p[0];
  write_end.fd = p[1];
  return p[0] >= 0 && p[1] >= 0;
}

std::vector<std::string> Candidates(const std::string& name, const std::vector<std::string>& env, std::string* path_out) {
  if (name.find('/') != std::string::npos) return {name};
  const std::string path = FindEnv(env, "PATH").value_or("");
  *path_out = path;
  std::vector<std::string> out;
  if (path.empty()) return out;
  size_t start = 0;
  for (;;) {
    const size_t colon = path.find(':', start);
    std::string dir = path.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    if (dir.empty()) dir = ".";  // as execvp: an empty entry is the working directory
    out.push_back(dir + (dir.back() == '/' ? "" : "/") + name);
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return out;
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

// ---- states -----------------------------------------------------------------------

struct StateRow {
  SlurmState state;
  const char* name;
  const char* code;
};
constexpr std::array<StateRow, 25> kStates{{
    {SlurmState::kPending, "PENDING", "PD"},
    {SlurmState::kRunning, "RUNNING", "R"},
    {SlurmState::kSuspended, "SUSPENDED", "S"},
    {SlurmState::kCompleting, "COMPLETING", "CG"},
    {SlurmState::kCompleted, "COMPLETED", "CD"},
    {SlurmState::kConfiguring, "CONFIGURING", "CF"},
    {SlurmState::kCancelled, "CANCELLED", "CA"},
    {SlurmState::kFailed, "FAILED", "F"},
    {SlurmState::kTimeout, "TIMEOUT", "TO"},
    {SlurmState::kNodeFail, "NODE_FAIL", "NF"},
    {SlurmState::kOutOfMemory, "OUT_OF_MEMORY", "OOM"},
    {SlurmState::kPreempted, "PREEMPTED", "PR"},
    {SlurmState::kBootFail, "BOOT_FAIL", "BF"},
    {SlurmState::kDeadline, "DEADLINE", "DL"},
    {SlurmState::kRequeued, "REQUEUED", "RQ"},
    {SlurmState::kRequeueHold, "REQUEUE_HOLD", "RH"},
    {SlurmState::kRequeueFed, "REQUEUE_FED", "RF"},
    {SlurmState::kResvDelHold, "RESV_DEL_HOLD", "RD"},
    {SlurmState::kResizing, "RESIZING", "RS"},
    {SlurmState::kRevoked, "REVOKED", "RV"},
    {SlurmState::kSignaling, "SIGNALING", "SI"},
    {SlurmState::kSpecialExit, "SPECIAL_EXIT", "SE"},
    {SlurmState::kStageOut, "STAGE_OUT", "SO"},
    {SlurmState::kStopped, "STOPPED", "ST"},
    {SlurmState::kUnknown, "UNKNOWN", ""},
}};

// ---- scontrol fields -----------------------------------------------------------

// Fields whose values may hold spaces (and '='): they end only at a field
// name from kJobKeys.
const std::set<std::string, std::less<>>& FreeTextKeys() {
  static const std::set<std::string, std::less<>> keys{"Command", "WorkDir",      "Reason",       "Comment",
                                                       "StdOut",  "StdErr",       "StdIn",        "JobName",
                                                       "AdminComment", "SystemComment"};
  return keys;
}

// The field names `scontrol show job` prints (Slurm 20.11 - 23.11).
const std::set<std::string, std::less<>>& JobKeys() {
  static const std::set<std::string, std::less<>> keys{
      "JobId", "ArrayJobId", "ArrayTaskId", "ArrayTaskThrottle", "HetJobId", "HetJobOffset", "HetJobIdSet",
      "JobName", "UserId", "GroupId", "MCS_label", "Priority", "Nice", "Account", "QOS", "WCKey", "JobState",
      "Reason", "Dependency", "Requeue", "Restarts", "BatchFlag", "Reboot", "ExitCode", "DerivedExitCode",
      "RunTime", "TimeLimit", "TimeMin", "SubmitTime", "EligibleTime", "AccrueTime", "StartTime", "EndTime",
      "Deadline", "PreemptEligibleTime", "PreemptTime", "SuspendTime", "SecsPreSuspend", "LastSchedEval",
      "Scheduler", "Partition", "AllocNode:Sid", "ReqNodeList", "ExcNodeList", "NodeList", "SchedNodeList",
      "BatchHost", "NumNodes", "NumCPUs", "NumTasks", "CPUs/Task", "ReqB:S:C:T", "ReqTRES", "AllocTRES", "TRES",
      "Socks/Node", "NtasksPerN:B:S:C", "CoreSpec", "MinCPUsNode", "MinMemoryNode", "MinMemoryCPU",
      "MinTmpDiskNode", "Features", "ClusterFeatures", "Prefer", "DelayBoot", "OverSubscribe", "Contiguous",
      "Licenses", "LicensesAlloc", "Network", "Command", "WorkDir", "AdminComment", "SystemComment", "Comment",
      "StdErr", "StdIn", "StdOut", "Power", "TresPerNode", "TresPerJob", "TresPerTask", "TresPerSocket",
      "CpusPerTres", "MemPerTres", "TresBind", "TresFreq", "MailUser", "MailType", "NtasksPerTRES", "Reservation",
      "Container", "ContainerID", "Cluster", "ResizeTime", "FedOrigin", "FedViableSiblings", "FedActiveSiblings",
      "BurstBuffer", "BurstBufferState", "SelinuxContext", "CpuFreqMin", "CpuFreqMax", "CpuFreqGov",
      "KillOInInvalidDependent", "OOMKillStep", "MemPerNode", "MemPerCPU", "Switches", "Wait-for-Switch",
      "ThreadSpec", "CronJob", "CrontabSpec", "Gres", "Tres", "ResvPort", "NodeListIndices", "Profile",
      "SpreadJob", "Segment", "StepMgrEnabled", "MaxNodes", "MinNodes", "RequeueExit", "RequeueExitHold",
      "Mcs_label", "DeadlineTime", "PartitionLimit", "SiblingsActive", "SiblingsViable", "Array",
  };
  return keys;
}

// The key of a token that starts a field ("JobId=12" -> "JobId"), or "".
std::string_view KeyOf(std::string_view token) {
  const size_t eq = token.find('=');
  if (eq == std::string_view::npos || eq == 0) return {};
  if (token[0] < 'A' || token[0] > 'Z') return {};
  for (size_t i = 1; i < eq; ++i) {
    const char c = token[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == ':' || c == '/' || c == '-';
    if (!ok) return {};
  }
  return token.substr(0, eq);
}

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// "1234" or "1234_7" or "1234_[...]" as a job id: the part before '_' (or
// '.', a step; or '+', a het component).
bool LeadingJobId(std::string_view s, int64_t& out) {
  const size_t end = s.find_first_of("_.+");
  return ParseCount(s.substr(0, end), out) && out > 0;
}

std::string Join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

// stderr (else stdout) of a failed run, trimmed, verbatim.
std::string Said(const CommandOutput& o) {
  const std::string_view err = Trim(o.err);
  return std::string(err.empty() ? Trim(o.out) : err);
}

}  // namespace

// ---- RunCommand -----------------------------------------------------------------------

std::string CommandOutput::Describe() const {
  if (signal != 0) return "killed by signal " + std::to_string(signal) + " (" + ::strsignal(signal) + ")";
  return "exit status " + std::to_string(exit_code);
}

Result<CommandOutput> RunCommand(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                                 std::chrono::milliseconds timeout, bool echo) {
  if (argv.empty() || argv[0].empty()) return Error{"no program given (argv is empty)"};
  for (const std::string& a : argv) {
    if (a.find('\0') != std::string::npos) return Error{Quote(argv[0]) + ": an argument holds a NUL byte"};
  }
  for (const std::string& e : env) {
    if (e.find('=') == std::string::npos || e.find('\0') != std::string::npos) {
      return Error{Quote(argv[0]) + ": environment entry '" + e + "': expected NAME=VALUE"};
    }
  }
  std::string path_var;
  const std::vector<std::string> candidates = Candidates(argv[0], env, &path_var);
  if (candidates.empty()) {
    return Error{"cannot execute " + Quote(argv[0]) + ": PATH is not set in its environment"};
  }

  std::vector<char*> cargv, cenv;
  for (const std::string& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const std::string& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);

  Fd out_r, out_w, err_r, err_w;
  if (!MakePipe(out_r, out_w) || !MakePipe(err_r, err_w)) {
    return Error{"cannot run " + Quote(argv[0]) + ": pipe: " + std::strerror(errno)};
  }

  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_w.fd, 1);
  posix_spawn_file_actions_adddup2(&actions, err_w.fd, 2);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  // Descriptors the caller opened without O_CLOEXEC (e.g. an SQLite file)
  // must not leak into sbatch.
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
#endif
  // Its own process group, so a timeout kills what it started too, and a
  // Ctrl-C at the terminal reaches the submitter, which decides; default
  // signal handling and an empty mask whatever the caller has.
  sigset_t empty, defaults;
  sigemptyset(&empty);
  sigfillset(&defaults);
  sigdelset(&defaults, SIGKILL);
  sigdelset(&defaults, SIGSTOP);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setsigmask(&attr, &empty);
  posix_spawnattr_setsigdefault(&attr, &defaults);

  // As execvp, but with the PATH of `env`: ENOENT-like errors go on to the
  // next entry, EACCES is remembered, anything else stops.
  pid_t pid = -1;
  int err = ENOENT;
  bool denied = false;
  for (const std::string& cand : candidates) {
    err = ::posix_spawn(&pid, cand.c_str(), &actions, &attr, cargv.data(), cenv.data());
    if (err == 0) break;
    pid = -1;
    if (err == EACCES) {
      denied = true;
      continue;
    }
    if (err == ENOENT || err == ENOTDIR || err == ESTALE || err == ENODEV || err == ETIMEDOUT) continue;
    break;
  }
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  out_w.Close();
  err_w.Close();
  if (pid < 0) {
    if (denied && (err == ENOENT || err == ENOTDIR)) err = EACCES;
    std::string msg = "cannot execute " + Quote(argv[0]) + ": " + std::strerror(err);
    if (argv[0].find('/') == std::string::npos) msg += " (PATH=" + path_var + ")";
    return Error{msg};
  }

  ::fcntl(out_r.fd, F_SETFL, ::fcntl(out_r.fd, F_GETFL) | O_NONBLOCK);
  ::fcntl(err_r.fd, F_SETFL, ::fcntl(err_r.fd, F_GETFL) | O_NONBLOCK);
  CommandOutput result;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto remaining_ms = [&]() {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    return std::max<int64_t>(0, left.count());
  };
  bool timed_out = false;
  // Both pipes at once: a program that fills stderr while we wait on stdout
  // (or the other way round) would otherwise block forever.
  while (out_r.fd >= 0 || err_r.fd >= 0) {
    const int64_t left = remaining_ms();
    if (left == 0) {
      timed_out = true;
      break;
    }
    pollfd pfds[2];
    nfds_t n = 0;
    if (out_r.fd >= 0) pfds[n++] = {out_r.fd, POLLIN, 0};
    if (err_r.fd >= 0) pfds[n++] = {err_r.fd, POLLIN, 0};
    const int rc = ::poll(pfds, n, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (rc < 0 && errno != EINTR) break;
    if (rc <= 0) continue;
    for (nfds_t i = 0; i < n; ++i) {
      if (pfds[i].revents == 0) continue;
      Fd& fd = pfds[i].fd == out_r.fd ? out_r : err_r;
      std::string& into = &fd == &out_r ? result.out : result.err;
      const size_t before = into.size();
      const bool open = Drain(fd.fd, into);
      if (echo && into.size() > before) {
        std::FILE* to = &fd == &out_r ? stdout : stderr;
        std::fwrite(into.data() + before, 1, into.size() - before, to);
        std::fflush(to);
      }
      if (!open) fd.Close();
    }
  }

  int status = 0;
  if (!timed_out) {
    // The pipes are closed; wait for the exit itself, still within the limit
    // (a program may close its output and go on).
    auto nap = std::chrono::milliseconds(1);
    for (;;) {
      const pid_t w = ::waitpid(pid, &status, WNOHANG);
      if (w == pid) break;
      if (w < 0 && errno != EINTR) return Error{Quote(argv[0]) + ": waitpid: " + std::strerror(errno)};
      if (remaining_ms() == 0) {
        timed_out = true;
        break;
      }
      std::this_thread::sleep_for(nap);
      nap = std::min(nap * 2, std::chrono::milliseconds(50));
    }
  }
  if (timed_out) {
    ::kill(-pid, SIGKILL);
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    const int64_t ms = timeout.count();
    std::string msg = Quote(argv[0]) + " did not finish within " +
                      (ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms") +
                      " and was killed";
    if (!Trim(result.err).empty()) msg += "; its stderr ended with: " + Tail(result.err, 2000);
    return Error{msg};
  }
  if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
    result.exit_code = -1;
  } else {
    result.exit_code = WEXITSTATUS(status);
  }
  return result;
}

int64_t MaxArraySize(const std::vector<std::string>& env) {
  Result<CommandOutput> r = RunCommand({"scontrol", "show", "config"}, env, std::chrono::seconds(10));
  if (!r || !r.value().ok()) return 1001;
  const std::string& out = r.value().out;
  const size_t at = out.find("\nMaxArraySize");
  if (at == std::string::npos) return 1001;
  const size_t eq = out.find('=', at);
  const int64_t v = eq == std::string::npos ? 0 : std::strtoll(out.c_str() + eq + 1, nullptr, 10);
  return v > 0 ? v : 1001;
}

// ---- states ------------------------------------------------------------------------------

SlurmState ParseSlurmState(std::string_view text) {
  text = Trim(text);
  text = text.substr(0, text.find(' '));  // "CANCELLED by 1000"
  while (!text.empty() && text.back() == '+') text.remove_suffix(1);  // sacct: "CANCELLED+"
  std::string upper(text);
  for (char& c : upper) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
  if (upper.empty()) return SlurmState::kUnknown;
  for (const StateRow& r : kStates) {
    if (upper == r.name || upper == r.code) return r.state;
  }
  return SlurmState::kUnknown;
}

const char* SlurmStateName(SlurmState s) {
  for (const StateRow& r : kStates) {
    if (r.state == s) return r.name;
  }
  return "UNKNOWN";
}

bool Final(SlurmState s) {
  switch (s) {
    case SlurmState::kCompleted:
    case SlurmState::kCancelled:
    case SlurmState::kFailed:
    case SlurmState::kTimeout:
    case SlurmState::kNodeFail:
    case SlurmState::kOutOfMemory:
    case SlurmState::kPreempted:
    case SlurmState::kBootFail:
    case SlurmState::kDeadline:
    case SlurmState::kRevoked: return true;
    default: return false;
  }
}

bool Succeeded(SlurmState s) { return s == SlurmState::kCompleted; }

// ---- ids -------------------------------------------------------------------------------------

std::string TaskId::ToString() const {
  return std::to_string(job_id) + (task ? "_" + std::to_string(*task) : std::string());
}

Result<TaskId> ParseTaskId(std::string_view text) {
  const std::string_view t = Trim(text);
  TaskId id;
  const size_t us = t.find('_');
  int64_t task = 0;
  if (!ParseCount(t.substr(0, us), id.job_id) || id.job_id <= 0 ||
      (us != std::string_view::npos && !ParseCount(t.substr(us + 1), task))) {
    return Error{"job id " + Quote(text) + ": expected JOB or JOB_TASK, e.g. 1234 or 1234_7"};
  }
  if (us != std::string_view::npos) id.task = task;
  return id;
}

Result<std::vector<int64_t>> ExpandArrayIndices(std::string_view text) {
  constexpr int64_t kMaxIndices = 4'000'001;  // Slurm's largest MaxArraySize
  std::string_view t = Trim(text);
  const auto bad = [&](const std::string& why) {
    return Error{"array indices " + Quote(text) + ": " + why + "; expected e.g. 7, 8-15%2, 3,5,9-10 or 1-7:2"};
  };
  if (!t.empty() && t.front() == '[') {
    if (t.back() != ']') return bad("unbalanced '['");
    t = t.substr(1, t.size() - 2);
  }
  if (const size_t pct = t.find('%'); pct != std::string_view::npos) {
    int64_t throttle = 0;
    if (!ParseCount(t.substr(pct + 1), throttle)) return bad("bad throttle after '%'");
    t = t.substr(0, pct);
  }
  if (t.empty()) return bad("empty");
  std::vector<int64_t> out;
  size_t start = 0;
  while (start <= t.size()) {
    size_t comma = t.find(',', start);
    if (comma == std::string_view::npos) comma = t.size();
    std::string_view item = t.substr(start, comma - start);
    int64_t step = 1;
    if (const size_t colon = item.find(':'); colon != std::string_view::npos) {
      if (!ParseCount(item.substr(colon + 1), step) || step < 1) return bad("bad step in " + Quote(item));
      item = item.substr(0, colon);
    }
    int64_t lo = 0, hi = 0;
    const size_t dash = item.find('-');
    if (dash == std::string_view::npos) {
      if (!ParseCount(item, lo)) return bad("bad index " + Quote(item));
      hi = lo;
    } else if (!ParseCount(item.substr(0, dash), lo) || !ParseCount(item.substr(dash + 1), hi)) {
      return bad("bad range " + Quote(item));
    }
    if (lo > hi) return bad("reversed range " + Quote(item));
    if (static_cast<int64_t>(out.size()) + (hi - lo) / step + 1 > kMaxIndices) return bad("too many indices");
    for (int64_t i = lo; i <= hi; i += step) out.push_back(i);
    start = comma + 1;
  }
  return out;
}

// ---- parsers -------------------------------------------------------------------------------

Result<int64_t> ParseSbatchParsable(std::string_view out) {
  // The id is the last line; anything before it is not ours to interpret.
  std::string_view last;
  for (std::string_view line : Lines(out)) {
    if (!Trim(line).empty()) last = Trim(line);
  }
  int64_t id = 0;
  if (!ParseCount(last.substr(0, last.find(';')), id) || id <= 0) {
    return Error{"sbatch --parsable printed " + Quote(Trim(out)) + "; expected a job id (ID or ID;CLUSTER)"};
  }
  return id;
}

Result<std::vector<QueueTask>> ParseSqueue(std::string_view out) {
  std::vector<QueueTask> tasks;
  int lineno = 0;
  for (std::string_view line : Lines(out)) {
    ++lineno;
    if (Trim(line).empty()) continue;
    const auto bad = [&](const std::string& why) {
      return Error{"squeue output line " + std::to_string(lineno) + " " + Quote(line) + ": " + why +
                   " (format " + kSqueueFormat + ")"};
    };
    const size_t bar1 = line.find('|');
    const size_t bar2 = bar1 == std::string_view::npos ? bar1 : line.find('|', bar1 + 1);
    if (bar2 == std::string_view::npos) return bad("expected ID|STATE|REASON");
    const std::string_view id = Trim(line.substr(0, bar1));
    QueueTask base;
    base.state_name = std::string(Trim(line.substr(bar1 + 1, bar2 - bar1 - 1)));
    base.state = ParseSlurmState(base.state_name);
    base.reason = std::string(Trim(line.substr(bar2 + 1)));
    const size_t bracket = id.find('[');
    if (bracket == std::string_view::npos) {
      Result<TaskId> t = ParseTaskId(id);
      if (!t) return bad(t.error().message);
      base.id = t.value();
      tasks.push_back(std::move(base));
      continue;
    }
    // A pending range: "1234_[8-15%2]".
    int64_t job = 0;
    if (bracket < 2 || id[bracket - 1] != '_' || !ParseCount(id.substr(0, bracket - 1), job) || job <= 0) {
      return bad("expected JOB_[INDICES]");
    }
    Result<std::vector<int64_t>> idx = ExpandArrayIndices(id.substr(bracket));
    if (!idx) return bad(idx.error().message);
    for (int64_t i : idx.value()) {
      QueueTask t = base;
      t.id = TaskId{job, i};
      tasks.push_back(std::move(t));
    }
  }
  return tasks;
}

Result<SlurmExitCode> ParseSlurmExitCode(std::string_view text) {
  const std::string_view t = Trim(text);
  const size_t colon = t.find(':');
  SlurmExitCode c;
  if (colon == std::string_view::npos || !ParseSignedInt(t.substr(0, colon), c.status) ||
      !ParseSignedInt(t.substr(colon + 1), c.signal)) {
    return Error{"exit code " + Quote(text) + ": expected STATUS:SIGNAL, e.g. 1:0"};
  }
  return c;
}

const std::string* JobInfo::Get(std::string_view key) const {
  auto it = fields.find(std::string(key));
  return it == fields.end() ? nullptr : &it->second;
}

Result<std::map<std::string, std::string>> ParseScontrolFields(std::string_view record) {
  std::map<std::string, std::string> fields;
  std::string key;           // the field being read
  size_t value_start = 0;    // where its value starts in `record`
  bool free_text = false;
  const auto finish = [&](size_t end) {
    if (!key.empty()) fields.emplace(key, std::string(Trim(record.substr(value_start, end - value_start))));
  };
  size_t i = 0;
  while (i < record.size()) {
    if (IsSpace(record[i])) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < record.size() && !IsSpace(record[end])) ++end;
    const std::string_view token = record.substr(i, end - i);
    const std::string_view k = KeyOf(token);
    const bool starts_field = !k.empty() && (!free_text || JobKeys().count(k));
    if (starts_field) {
      finish(i);
      key = std::string(k);
      value_start = i + k.size() + 1;
      free_text = FreeTextKeys().count(k) > 0;
    } else if (key.empty()) {
      return Error{"scontrol output " + Quote(Trim(record).substr(0, 80)) + ": expected KEY=VALUE at " + Quote(token)};
    }
    // else: a word of the current value ("Reason=launch failed requeued held").
    i = end;
  }
  finish(record.size());
  return fields;
}

Result<std::vector<JobInfo>> ParseScontrolShowJob(std::string_view out) {
  // Records: each starts at a line whose first field is JobId=; other
  // non-empty lines continue it (the multi-line form without -o).
  std::vector<std::string> records;
  for (std::string_view line : Lines(out)) {
    const std::string_view t = Trim(line);
    if (t.empty()) continue;
    if (t.substr(0, 6) == "JobId=" || records.empty()) {
      records.emplace_back(t);
    } else {
      records.back() += " " + std::string(t);
    }
  }
  std::vector<JobInfo> jobs;
  for (const std::string& rec : records) {
    Result<std::map<std::string, std::string>> f = ParseScontrolFields(rec);
    if (!f) return f.error();
    JobInfo j;
    j.fields = std::move(f.value());
    const auto bad = [&](const std::string& why) {
      return Error{"scontrol show job: " + why + " in " + Quote(std::string_view(rec).substr(0, 120))};
    };
    const std::string* id = j.Get("JobId");
    if (!id || !ParseCount(*id, j.job_id)) return bad("no numeric JobId");
    if (const std::string* a = j.Get("ArrayJobId")) {
      int64_t v = 0;
      if (!ParseCount(*a, v)) return bad("ArrayJobId " + Quote(*a) + " is not a number");
      j.array_job_id = v;
    }
    if (const std::string* v = j.Get("ArrayTaskId")) j.array_task_id = *v;
    if (const std::string* v = j.Get("JobName")) j.name = *v;
    if (const std::string* v = j.Get("JobState")) {
      j.state_name = *v;
      j.state = ParseSlurmState(*v);
    }
    if (const std::string* v = j.Get("Reason")) j.reason = *v;
    if (const std::string* v = j.Get("Dependency")) j.dependency = *v;
    if (const std::string* v = j.Get("ExitCode")) {
      Result<SlurmExitCode> c = ParseSlurmExitCode(*v);
      if (!c) return bad(c.error().message);
      j.exit_code = c.value();
    }
    jobs.push_back(std::move(j));
  }
  return jobs;
}

// ---- RealSlurmCli -------------------------------------------------------------------------

RealSlurmCli::RealSlurmCli(std::vector<std::string> env, SlurmPrograms programs, std::chrono::milliseconds timeout)
    : env_(std::move(env)), programs_(std::move(programs)), timeout_(timeout) {}

Result<CommandOutput> RealSlurmCli::Run(const std::vector<std::string>& argv) const {
  return RunCommand(argv, env_, timeout_);
}

std::vector<std::string> RealSlurmCli::SubmitArgv(const std::vector<std::string>& sbatch_args,
                                                  const std::string& script_path) const {
  std::vector<std::string> argv{programs_.sbatch, "--parsable"};
  argv.insert(argv.end(), sbatch_args.begin(), sbatch_args.end());
  argv.push_back(script_path);
  return argv;
}

std::vector<std::string> RealSlurmCli::CancelArgv(const std::vector<std::string>& ids,
                                                  std::optional<SlurmState> only_in_state) const {
  // --quiet: a job that already ended is not an error.
  std::vector<std::string> argv{programs_.scancel, "--quiet"};
  if (only_in_state) argv.push_back(std::string("--state=") + SlurmStateName(*only_in_state));
  argv.insert(argv.end(), ids.begin(), ids.end());
  return argv;
}

std::vector<std::string> RealSlurmCli::QueueArgv(const std::vector<int64_t>& job_ids) const {
  std::vector<std::string> ids;
  for (int64_t id : job_ids) ids.push_back(std::to_string(id));
  // --array: one line per task, pending ones too; --states=all: with only
  // --jobs, finished tasks still known to slurmctld are shown as well.
  return {programs_.squeue, "--noheader", "--array", "--states=all", "--jobs=" + Join(ids, ","),
          std::string("--format=") + kSqueueFormat};
}

Result<int64_t> RealSlurmCli::Submit(const std::vector<std::string>& sbatch_args, const std::string& script_path) {
  Result<CommandOutput> r = Run(SubmitArgv(sbatch_args, script_path));
  if (!r) return Error{"sbatch " + script_path + ": " + r.error().message + " " + kSubmitOutcomeUnknown};
  const CommandOutput& o = r.value();
  // Killed by a signal: slurmctld may have taken the job before sbatch died.
  if (o.signal) return Error{"sbatch " + script_path + " " + o.Describe() + " " + kSubmitOutcomeUnknown};
  if (!o.ok()) return Error{"sbatch rejected " + script_path + " (" + o.Describe() + "): " + Said(o)};
  // Exit 0 means slurmctld accepted a job; only its id is missing.
  Result<int64_t> id = ParseSbatchParsable(o.out);
  if (!id) return Error{"sbatch " + script_path + ": " + id.error().message + " " + kSubmitOutcomeUnknown};
  return id;
}

bool SubmitOutcomeUnknown(const Error& e) {
  const std::string_view m = e.message, tail = kSubmitOutcomeUnknown;
  return m.size() >= tail.size() && m.substr(m.size() - tail.size()) == tail;
}

Status RealSlurmCli::Cancel(const std::vector<std::string>& ids, std::optional<SlurmState> only_in_state) {
  if (ids.empty()) return Ok{};
  for (const std::string& id : ids) {
    if (Result<TaskId> t = ParseTaskId(id); !t) return Error{"scancel: " + t.error().message};
  }
  if (only_in_state && *only_in_state != SlurmState::kPending && *only_in_state != SlurmState::kRunning &&
      *only_in_state != SlurmState::kSuspended) {
    return Error{std::string("scancel: --state=") + SlurmStateName(*only_in_state) +
                 " is not accepted; use PENDING, RUNNING or SUSPENDED"};
  }
  Result<CommandOutput> r = Run(CancelArgv(ids, only_in_state));
  if (!r) return Error{"scancel " + Join(ids, " ") + ": " + r.error().message};
  const CommandOutput& o = r.value();
  if (o.ok()) return Ok{};
  // A job that ended or was purged meanwhile is what we wanted anyway.
  bool benign = o.signal == 0;
  for (std::string_view line : Lines(o.err)) {
    if (Trim(line).empty()) continue;
    if (line.find("already completing or completed") == std::string_view::npos &&
        line.find("Invalid job id specified") == std::string_view::npos) {
      benign = false;
    }
  }
  if (benign) return Ok{};
  return Error{"scancel " + Join(ids, " ") + " failed (" + o.Describe() + "): " + Said(o)};
}

Result<std::vector<QueueTask>> RealSlurmCli::Queue(const std::vector<int64_t>& job_ids) {
  if (job_ids.empty()) return std::vector<QueueTask>{};
  Result<CommandOutput> r = Run(QueueArgv(job_ids));
  if (!r) return Error{"squeue: " + r.error().message};
  const CommandOutput& o = r.value();
  if (!o.ok()) {
    // Asking for a single job slurmctld has forgotten is an error to squeue.
    if (o.signal == 0 && o.err.find("Invalid job id specified") != std::string::npos) return std::vector<QueueTask>{};
    return Error{"squeue failed (" + o.Describe() + "): " + Said(o)};
  }
  return ParseSqueue(o.out);
}

Result<std::vector<JobInfo>> RealSlurmCli::ShowJob(int64_t job_id) {
  const std::string id = std::to_string(job_id);
  Result<CommandOutput> r = Run({programs_.scontrol, "--oneliner", "show", "job", id});
  if (!r) return Error{"scontrol show job " + id + ": " + r.error().message};
  const CommandOutput& o = r.value();
  if (!o.ok()) return Error{"scontrol show job " + id + " failed (" + o.Describe() + "): " + Said(o)};
  return ParseScontrolShowJob(o.out);
}

Result<std::vector<int64_t>> RealSlurmCli::FindJobsByName(const std::string& name) {
  if (name.empty() || name.find(',') != std::string::npos) {
    return Error{"job name " + Quote(name) + ": must be non-empty and hold no ','"};
  }
  const std::string user = "--user=" + std::to_string(::getuid());
  std::set<int64_t> ids;
  Result<CommandOutput> r =
      Run({programs_.squeue, "--noheader", user, "--states=all", "--name=" + name, "--format=%F"});
  if (!r) return Error{"squeue --name=" + name + ": " + r.error().message};
  if (!r.value().ok()) {
    return Error{"squeue --name=" + name + " failed (" + r.value().Describe() + "): " + Said(r.value())};
  }
  for (std::string_view line : Lines(r.value().out)) {
    int64_t id = 0;
    if (Trim(line).empty()) continue;
    if (!LeadingJobId(Trim(line), id)) return Error{"squeue --name=" + name + ": unexpected line " + Quote(line)};
    ids.insert(id);
  }
  if (ids.empty()) {
    // slurmctld forgets finished jobs after MinJobAge; accounting does not.
    // Where accounting is off sacct fails, and squeue's answer stands.
    Result<CommandOutput> a = Run({programs_.sacct, "--noheader", "--allocations", "--parsable2", user,
                                   "--name=" + name, "--format=JobID", "--starttime=now-30days"});
    if (a && a.value().ok()) {
      for (std::string_view line : Lines(a.value().out)) {
        int64_t id = 0;
        if (LeadingJobId(Trim(line), id)) ids.insert(id);
      }
    }
  }
  return std::vector<int64_t>(ids.begin(), ids.end());
}

}  // namespace ix
