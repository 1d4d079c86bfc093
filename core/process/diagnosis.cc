#include "core/process/diagnosis.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <exception>
#include <iterator>
#include <map>
#include <thread>
#include <utility>

#include "core/base/file_text.h"
#include "core/base/proc_fs.h"
#include "core/base/text.h"
#include "core/base/unique_fd.h"
#include "core/process/tcp_peers.h"
#include "core/process/process_tree.h"
#include "core/process/signal_dump.h"

extern char** environ;

namespace ix {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr size_t kMinFileBytes = 4096;
constexpr size_t kProcFileBytes = size_t{1} << 20;   // a stat, a wchan, a kernel stack
constexpr size_t kTcpTableBytes = size_t{32} << 20;  // a namespace with thousands of TIME_WAIT lines
constexpr size_t kMaxSocketLines = 256;              // per process: a router may hold thousands
constexpr size_t kParallelPySpy = 16;                // a node's servers and EngineCores, at once
constexpr milliseconds kReapAfterKill{200};

// "EACCES": the name to grep for.
std::string ErrnoName(int e) {
  const char* name = ::strerrorname_np(e);
  return name ? std::string(name) : "errno " + std::to_string(e);
}

// "EACCES (Permission denied)": the name, and the text to read.
std::string ErrnoText(int e) { return ErrnoName(e) + " (" + std::strerror(e) + ")"; }

std::string Seconds(Clock::duration d) {
  char s[32];
  std::snprintf(s, sizeof s, "%.2f s", std::chrono::duration<double>(d).count());
  return s;
}

// `text` with a line end after it, whatever it ended with.
void AppendBlock(std::string& out, std::string_view text) {
  out += text;
  if (!text.empty() && text.back() != '\n') out += '\n';
}

// Notes of one target: each distinct line once, in the order first seen
// (three processes whose stacks cannot be read make one note).
struct Notes {
  std::vector<std::string> lines;
  void Add(std::string line) {
    if (std::find(lines.begin(), lines.end(), line) == lines.end()) lines.push_back(std::move(line));
  }
};

// Says in the file, and once in the notes, that `what` could not be read.
void Unreadable(const std::string& what, const std::string& why, std::string& out, Notes& notes) {
  out += what + ": unreadable: " + why + "\n";
  notes.Add(what + " unreadable: " + why);
}

// ---- /proc ------------------------------------------------------------------

// A file under /proc (`rel` is relative to it), read through ProcDirFd()
// so a container's detached /proc still answers.
std::string ReadProc(const std::string& rel, int* err, size_t cap = kProcFileBytes) {
  return ReadFileTextAt(ProcDirFd(), rel, err, cap);
}

// The numeric names in the /proc directory `rel` (a process's tasks or
// descriptors), ascending; *err is the errno when it cannot be listed.
std::vector<uint64_t> NumericEntries(const std::string& rel, int* err) {
  std::vector<uint64_t> out;
  const int fd = ::openat(ProcDirFd(), rel.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR* dir = fd >= 0 ? ::fdopendir(fd) : nullptr;
  *err = dir ? 0 : errno;
  if (!dir) {
    if (fd >= 0) ::close(fd);
    return out;
  }
  while (dirent* e = ::readdir(dir)) {
    uint64_t n = 0;
    if (ParseUnsigned(e->d_name, n)) out.push_back(n);
  }
  ::closedir(dir);
  std::sort(out.begin(), out.end());
  return out;
}

const char* StateWord(char state) {
  static const char* const kWords[] = {
      "running", "sleeping", "uninterruptible sleep", "stopped", "tracing stop", "zombie", "dead", "idle"};
  const size_t i = std::string_view("RSDTtZXI").find(state);
  return i == std::string_view::npos ? "unknown" : kWords[i];
}

// The kernel function `rel` (a process or task directory) waits in; "-"
// for none (running, or not blocked).
std::string Wchan(const std::string& rel) {
  int err = 0;
  const std::string w(Trim(ReadProc(rel + "/wchan", &err)));
  if (err) return "unreadable:" + ErrnoName(err);
  return w.empty() || w == "0" ? "-" : Printable(w);
}

// ---- TCP sockets ------------------------------------------------------------

// A TCP socket as its namespace's table lists it.
struct TcpSocket {
  std::string local, remote;  // "127.0.0.1:8000", "[::1]:8000"
  std::string state;          // "LISTEN"
};

template <class T>
bool ParseHex(std::string_view s, T& out) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out, 16);
  return !s.empty() && r.ec == std::errc() && r.ptr == s.data() + s.size();
}

const char* TcpStateName(unsigned state) {
  static const char* const kNames[] = {"?",         "ESTABLISHED", "SYN_SENT",    "SYN_RECV",   "FIN_WAIT1",
                                       "FIN_WAIT2", "TIME_WAIT",   "CLOSE",       "CLOSE_WAIT", "LAST_ACK",
                                       "LISTEN",    "CLOSING",     "NEW_SYN_RECV"};
  return state < std::size(kNames) ? kNames[state] : "?";
}

// Adds the sockets of /proc/PID/net/tcp or tcp6 text by inode. Lines that
// do not parse, and sockets no process holds (inode 0: TIME_WAIT), are skipped.
void AddTcpTable(std::string_view text, std::map<uint64_t, TcpSocket>& out) {
  for (std::string_view line : Lines(text)) {
    // "sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ..."
    std::vector<std::string_view> f;
    for (std::string_view w : Split(line, ' ')) {
      if (!w.empty()) f.push_back(w);
    }
    unsigned state = 0;
    uint64_t inode = 0;
    if (f.size() < 10 || !ParseHex(f[3], state) || !ParseUnsigned(f[9], inode) || inode == 0) continue;
    TcpSocket s{KernelEndpointText(f[1]), KernelEndpointText(f[2]), TcpStateName(state)};
    if (!s.local.empty()) out[inode] = std::move(s);
  }
}

// The TCP sockets of each network namespace, read once per namespace: a
// table lists the whole namespace, and a step's processes usually share one.
class SocketTables {
 public:
  // The sockets of PID's namespace; `error` is set when neither tcp nor
  // tcp6 could be read.
  const std::map<uint64_t, TcpSocket>& For(pid_t pid, std::string& error) {
    const std::string dir = std::to_string(pid);
    struct stat st{};
    const bool ns = ::fstatat(ProcDirFd(), (dir + "/ns/net").c_str(), &st, 0) == 0;
    auto [it, fresh] = tables_.try_emplace(ns ? "ns " + std::to_string(st.st_ino) : "pid " + dir);
    Table& t = it->second;
    if (fresh) {
      int failed = 0;
      for (const char* name : {"/net/tcp", "/net/tcp6"}) {
        int err = 0;
        AddTcpTable(ReadProc(dir + name, &err, kTcpTableBytes), t.sockets);
        if (err) t.error = "/proc/" + dir + name + ": " + ErrnoText(err);
        failed += err ? 1 : 0;
      }
      if (failed < 2) t.error.clear();  // one is enough: a machine without IPv6 has no tcp6
    }
    error = t.error;
    return t.sockets;
  }

 private:
  struct Table {
    std::map<uint64_t, TcpSocket> sockets;
    std::string error;
  };
  std::map<std::string, Table> tables_;
};

// ---- one process --------------------------------------------------------------

// Every thread's name, state and wchan, then their kernel stacks grouped:
// threads blocked the same way (a pool in one futex) share one stack.
void DescribeThreads(const std::string& dir, std::string& out, Notes& notes) {
  int err = 0;
  const std::vector<uint64_t> tids = NumericEntries(dir + "/task", &err);
  if (err) return Unreadable("threads", ErrnoText(err), out, notes);
  out += "threads (" + std::to_string(tids.size()) + "): tid state wchan name\n";
  std::vector<std::pair<std::string, std::vector<uint64_t>>> stacks;
  int stack_err = 0;
  for (uint64_t tid : tids) {
    const std::string task = dir + "/task/" + std::to_string(tid);
    const Result<ProcessInfo> t = ReadProcessInfo(static_cast<pid_t>(tid));  // /proc/TID: the thread's own
    if (!t) continue;                                                        // gone since the listing
    out +=
        "  " + std::to_string(tid) + " " + t.value().state + " " + Wchan(task) + " " + Printable(t.value().comm) + "\n";
    int e = 0;
    const std::string stack = ReadProc(task + "/stack", &e);  // root only
    if (e) {
      stack_err = e;
      continue;
    }
    auto same = std::find_if(stacks.begin(), stacks.end(), [&](const auto& s) { return s.first == stack; });
    if (same == stacks.end()) same = stacks.insert(stacks.end(), {stack, {}});
    same->second.push_back(tid);
  }
  if (stacks.empty() && stack_err) return Unreadable("kernel stacks", ErrnoText(stack_err), out, notes);
  out += "kernel stacks:\n";
  for (const auto& [stack, group] : stacks) {
    out += group.size() == 1 ? "  thread" : "  threads";
    for (uint64_t tid : group) out += " " + std::to_string(tid);
    out += ":\n";
    for (std::string_view line : Lines(stack)) out += "    " + Printable(line) + "\n";
  }
}

// The TCP sockets among PID's descriptors, with the count of the others
// (unix sockets: vLLM's ZMQ; UDP).
void DescribeSockets(pid_t pid, SocketTables& tables, std::string& out, Notes& notes) {
  const std::string fd_dir = std::to_string(pid) + "/fd";
  int err = 0;
  const std::vector<uint64_t> fds = NumericEntries(fd_dir, &err);
  if (err) return Unreadable("sockets", ErrnoText(err), out, notes);
  const std::map<uint64_t, TcpSocket>* tcp = nullptr;  // read at the first socket
  std::string table_error, lines;
  size_t tcp_count = 0, other = 0;
  for (uint64_t fd : fds) {
    char link[64];
    const ssize_t n = ::readlinkat(ProcDirFd(), (fd_dir + "/" + std::to_string(fd)).c_str(), link, sizeof link);
    const std::string_view l(link, n > 0 ? static_cast<size_t>(n) : 0);
    uint64_t inode = 0;
    if (l.size() < 10 || !l.starts_with("socket:[") || l.back() != ']' ||
        !ParseUnsigned(l.substr(8, l.size() - 9), inode)) {
      continue;
    }
    if (!tcp) tcp = &tables.For(pid, table_error);
    const auto it = tcp->find(inode);
    if (it == tcp->end()) {
      ++other;
      continue;
    }
    if (++tcp_count > kMaxSocketLines) continue;
    const TcpSocket& s = it->second;
    lines += "  fd " + std::to_string(fd) + ": " + s.state + " " + s.local +
             (s.state == "LISTEN" ? "" : " -> " + s.remote) + "\n";
  }
  out += "sockets: " + std::to_string(tcp_count) + " TCP, " + std::to_string(other) + " other\n" + lines;
  if (tcp_count > kMaxSocketLines) out += "  ... " + std::to_string(tcp_count - kMaxSocketLines) + " more\n";
  if (!table_error.empty()) Unreadable("TCP tables", table_error, out, notes);
}

void DescribeProcess(const ProcessInfo& p, SocketTables& tables, std::string& out, Notes& notes) {
  const std::string dir = std::to_string(p.pid);
  const double tick = static_cast<double>(::sysconf(_SC_CLK_TCK));
  const double page_mib = static_cast<double>(::sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
  char cpu[128];
  std::snprintf(cpu, sizeof cpu, "cpu: %.2f s user, %.2f s system; rss %.0f MiB\n",
                static_cast<double>(p.utime_ticks) / tick, static_cast<double>(p.stime_ticks) / tick,
                static_cast<double>(p.rss_pages) * page_mib);
  out += "\n== process " + dir + " (" + Printable(p.comm) + "), parent " + std::to_string(p.ppid) + "\n";
  out += "state: " + std::string(1, p.state) + " (" + StateWord(p.state) + ")\n";
  out += "wchan: " + Wchan(dir) + "\n";
  out += cpu;
  DescribeThreads(dir, out, notes);
  DescribeSockets(p.pid, tables, out, notes);
}

// ---- py-spy -------------------------------------------------------------------

// One `py-spy dump --pid TARGET`. Invariants: pgid is its pid (it leads
// its own process group, so a wrapper script's children die with it) from
// its start until it is reaped, 0 otherwise; out is open until EOF, the cap
// or the kill; outcome is "" until it has ended.
struct PySpyRun {
  size_t tree = 0;  // whose file it goes in
  pid_t target = 0;
  pid_t pgid = 0;
  UniqueFd out;
  std::string text;
  std::string outcome;  // "exit 0 after 0.41 s", "killed at the deadline after 3.00 s"
  bool failed = false;  // anything but exit 0: noted
  Clock::time_point started;
};

// RUN ended otherwise than by exit 0: `outcome` says how, unless said already.
void Fail(PySpyRun& run, const std::string& outcome) {
  if (run.outcome.empty()) run.outcome = outcome;
  run.failed = true;
}

// Starts RUN's py-spy: stdout and stderr into a pipe, stdin /dev/null, no
// other descriptor of ours, default signals, its own group. posix_spawn,
// not fork: nothing of this process runs in the child, whatever threads it has.
void StartPySpy(const std::string& program, PySpyRun& run) {
  run.started = Clock::now();
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return Fail(run, "not run: pipe: " + ErrnoText(errno));
  UniqueFd read_end(p[0]), write_end(p[1]);
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawn_file_actions_adddup2(&actions, write_end.get(), 1);
  ::posix_spawn_file_actions_adddup2(&actions, write_end.get(), 2);
  ::posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  ::posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  ::posix_spawnattr_init(&attr);
  sigset_t none, all;
  ::sigemptyset(&none);
  ::sigfillset(&all);
  ::posix_spawnattr_setsigmask(&attr, &none);
  ::posix_spawnattr_setsigdefault(&attr, &all);
  ::posix_spawnattr_setpgroup(&attr, 0);
  ::posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::string pid_text = std::to_string(run.target), dump = "dump", flag = "--pid";
  std::string path = program;
  char* argv[] = {path.data(), dump.data(), flag.data(), pid_text.data(), nullptr};
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, program.c_str(), &actions, &attr, argv, environ);
  ::posix_spawn_file_actions_destroy(&actions);
  ::posix_spawnattr_destroy(&attr);
  if (rc != 0) return Fail(run, "not run: " + ErrnoText(rc));
  run.pgid = pid;
  ::fcntl(read_end.get(), F_SETFL, O_NONBLOCK);
  run.out = std::move(read_end);
}

void KillRun(PySpyRun& run, const std::string& why) {
  if (run.pgid > 0) ::kill(-run.pgid, SIGKILL);
  run.out.reset();
  Fail(run, why + " after " + Seconds(Clock::now() - run.started));
}

// Reads what RUN's py-spy has written so far; at EOF closes the pipe,
// past `cap` kills it (its output is cut there).
void Drain(PySpyRun& run, size_t cap) {
  char buf[16384];
  while (run.out.valid()) {
    const ssize_t n = ::read(run.out.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n <= 0) return run.out.reset();  // EOF, or an error: no more output either way
    run.text.append(buf, std::min(static_cast<size_t>(n), cap - run.text.size()));
    if (run.text.size() >= cap) KillRun(run, "killed: its output reached " + std::to_string(cap) + " bytes");
  }
}

// Reaps RUN's py-spy if it has exited; the outcome says how, unless a
// kill has said it already.
void Reap(PySpyRun& run) {
  int status = 0;
  const pid_t r = ::waitpid(run.pgid, &status, WNOHANG);
  if (r == 0 || (r < 0 && errno == EINTR)) return;
  run.pgid = 0;
  if (!run.outcome.empty()) return;
  if (r < 0) {
    run.outcome = "ended, its status taken by another waiter";  // a caller that reaps every child
  } else if (WIFEXITED(status)) {
    run.outcome = "exit " + std::to_string(WEXITSTATUS(status));
    run.failed = WEXITSTATUS(status) != 0;
  } else {
    Fail(run, "killed by signal " + std::to_string(WTERMSIG(status)));
  }
  run.outcome += " after " + Seconds(Clock::now() - run.started);
}

// Runs every dump, kParallelPySpy at once, reading their output as it
// comes, until all have ended or the deadline; then kills what is left.
void RunPySpy(const std::string& program, std::vector<PySpyRun>& runs, Clock::time_point deadline, size_t cap) {
  size_t next = 0;
  auto busy = [](const PySpyRun& r) { return r.pgid > 0 || r.out.valid(); };
  for (;;) {
    size_t live = 0;
    for (PySpyRun& r : runs) {
      if (r.pgid > 0) Reap(r);
      live += busy(r) ? 1 : 0;
    }
    const Clock::time_point now = Clock::now();
    for (; live < kParallelPySpy && next < runs.size() && now < deadline; ++next) {
      StartPySpy(program, runs[next]);
      live += busy(runs[next]) ? 1 : 0;
    }
    if ((live == 0 && next == runs.size()) || now >= deadline) break;
    std::vector<pollfd> fds;
    std::vector<PySpyRun*> owners;
    bool awaiting_exit = false;  // an exit is not pollable without a pidfd: look again in a few ms
    for (PySpyRun& r : runs) {
      if (r.out.valid()) {
        fds.push_back({r.out.get(), POLLIN, 0});
        owners.push_back(&r);
      }
      awaiting_exit = awaiting_exit || (r.pgid > 0 && !r.out.valid());
    }
    milliseconds wait = std::min(std::chrono::ceil<milliseconds>(deadline - now), milliseconds(1000));
    if (awaiting_exit) wait = std::min(wait, milliseconds(5));
    if (::poll(fds.data(), fds.size(), static_cast<int>(wait.count())) <= 0) continue;
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents) Drain(*owners[i], cap);
    }
  }
  for (size_t i = next; i < runs.size(); ++i) Fail(runs[i], "not run: the deadline passed");
  for (PySpyRun& r : runs) {
    if (!busy(r)) continue;
    if (r.out.valid()) Drain(r, cap);  // what it wrote before the deadline
    KillRun(r, "killed at the deadline");
  }
  // SIGKILL ends a process in microseconds, unless it is stuck in the
  // kernel itself: wait that long at most, never for it.
  const Clock::time_point until = Clock::now() + kReapAfterKill;
  auto unreaped = [&] {
    return std::count_if(runs.begin(), runs.end(), [](PySpyRun& r) { return r.pgid > 0 && (Reap(r), r.pgid > 0); });
  };
  while (unreaped() > 0 && Clock::now() < until) std::this_thread::sleep_for(milliseconds(1));
  for (PySpyRun& r : runs) {
    if (r.pgid > 0) r.outcome += "; it did not exit after SIGKILL and is left unreaped";
  }
}

// ---- the files ----------------------------------------------------------------

// One target's tree and the file being made of it.
struct TreeDiagnosis {
  const DiagnosisTarget* target = nullptr;
  std::vector<ProcessInfo> processes;  // the root first, then its descendants, breadth first
  std::string text;
  Notes notes;
};

// The root and its descendants (zombies too) from `table`, or (when /proc could not
// be listed) the root alone; empty when the root is gone.
std::vector<ProcessInfo> TreeOf(pid_t root, const Result<std::vector<ProcessInfo>>& table) {
  std::vector<ProcessInfo> out;
  if (!table) {
    if (Result<ProcessInfo> p = ReadProcessInfo(root)) out.push_back(p.value());
    return out;
  }
  const auto it =
      std::find_if(table.value().begin(), table.value().end(), [&](const ProcessInfo& p) { return p.pid == root; });
  if (it == table.value().end()) return out;
  out.push_back(*it);
  for (ProcessInfo& p : DescendantsIn(table.value(), root)) out.push_back(std::move(p));
  return out;
}

std::string UtcNow() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  char s[32] = "?";
  if (::gmtime_r(&now, &tm)) std::strftime(s, sizeof s, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return s;
}

// `text` cut to `cap` bytes, saying so in its last line.
void CapText(std::string& text, size_t cap) {
  if (text.size() <= cap) return;
  const std::string mark =
      "\n[cut: " + std::to_string(text.size()) + " bytes, more than the cap of " + std::to_string(cap) + "]\n";
  text.resize(cap - mark.size());
  text += mark;
}

// The header and every process's /proc section of one target.
void ReadTree(TreeDiagnosis& tree, SocketTables& sockets, const DiagnosisOptions& options) {
  const DiagnosisTarget& t = *tree.target;
  std::string pids;
  for (const ProcessInfo& p : tree.processes) pids += " " + std::to_string(p.pid);
  tree.text = "ix diagnosis of '" + Printable(t.name) + "' (pid " + std::to_string(t.pid) + ")\ntaken: " + UtcNow() +
              "\nprocesses (" + std::to_string(tree.processes.size()) + "):" + pids + "\n";
  if (tree.processes.empty()) {
    tree.text += "\n== process " + std::to_string(t.pid) + ": gone\n";
    tree.notes.Add("process " + std::to_string(t.pid) + " is gone");
  }
  for (size_t i = 0; i < tree.processes.size(); ++i) {
    const ProcessInfo& p = tree.processes[i];
    // The root is always read: a few /proc files, milliseconds.
    if (i > 0 && Clock::now() >= options.deadline) {
      tree.text +=
          "\n== process " + std::to_string(p.pid) + " (" + Printable(p.comm) + "): not read, the deadline passed\n";
      tree.notes.Add("the deadline passed before every process was read");
      continue;
    }
    DescribeProcess(p, sockets, tree.text, tree.notes);
  }
}

// The rest of one target's file: its log's end, the GPUs, its faulthandler
// and py-spy dumps.
void FinishTree(TreeDiagnosis& tree, size_t index, const std::vector<PySpyRun>& runs, const SignalDump& dump,
                const DiagnosisOptions& options, size_t cap) {
  const DiagnosisTarget& t = *tree.target;
  if (!t.log.empty()) {
    const std::string tail = TailLinesAt(options.result_dir_fd, t.log, options.log_lines);
    tree.text += "\n== log " + Printable(t.log) + ", last " + std::to_string(options.log_lines) + " lines\n";
    AppendBlock(tree.text, tail.empty() ? "(empty or unreadable)" : tail);
    if (tail.empty()) tree.notes.Add("log " + Printable(t.log) + ": empty or unreadable");
  }
  if (!options.gpu_rows.empty()) AppendBlock(tree.text += "\n== gpus\n", options.gpu_rows);
  tree.text += DumpSection(dump, options.result_dir_fd, cap);
  for (const PySpyRun& r : runs) {
    if (r.tree != index) continue;
    tree.text += "\n== py-spy dump --pid " + std::to_string(r.target) + ": " + r.outcome + "\n";
    AppendBlock(tree.text, r.text);
    if (r.failed) tree.notes.Add("py-spy on pid " + std::to_string(r.target) + ": " + r.outcome);
  }
}

void Diagnose(const std::vector<DiagnosisTarget>& targets, const DiagnosisOptions& options, DiagnosisReport& report) {
  const size_t cap = std::max(options.max_file_bytes, kMinFileBytes);
  const Result<std::vector<ProcessInfo>> table = ListProcesses();
  if (!table) report.notes.push_back(table.error().message + "; only the servers' own processes are read");
  // /proc first, py-spy after: a dump stops its target for a moment, and
  // the state to record is the hang's, not the dump's.
  SocketTables sockets;
  std::vector<TreeDiagnosis> trees(targets.size());
  std::vector<PySpyRun> runs;
  std::vector<SignalDump> dumps(targets.size());
  for (size_t i = 0; i < targets.size(); ++i) {
    trees[i].target = &targets[i];
    trees[i].processes = TreeOf(targets[i].pid, table);
    ReadTree(trees[i], sockets, options);
    if (options.dump_signal > 0) {
      dumps[i] = SendDumpSignal(trees[i].processes, options.dump_signal, options.result_dir_fd, targets[i].log);
    }
    for (const ProcessInfo& p : trees[i].processes) {
      // Never the caller itself: a dump stops its target, and the caller
      // is the one that must kill the dump at the deadline.
      if (options.py_spy.empty() || p.exited() || p.pid == ::getpid()) continue;
      runs.emplace_back();
      runs.back().tree = i;
      runs.back().target = p.pid;
    }
  }
  if (!runs.empty()) RunPySpy(options.py_spy, runs, options.deadline, cap);
  AwaitDumps(dumps, options.result_dir_fd, options.deadline);
  std::vector<std::string> names;
  for (size_t i = 0; i < trees.size(); ++i) {
    FinishTree(trees[i], i, runs, dumps[i], options, cap);
    CapText(trees[i].text, cap);
    // Two servers whose names sanitize alike keep a file each.
    std::string file = DiagnosisFileName(targets[i].name);
    if (std::find(names.begin(), names.end(), file) != names.end()) {
      file = DiagnosisFileName(targets[i].name + "-" + std::to_string(targets[i].pid));
    }
    names.push_back(file);
    const std::string who = Printable(targets[i].name) + ": ";
    if (Status s = WriteFileAtomicAt(options.result_dir_fd, options.result_dir_label, file, trees[i].text); s) {
      report.files.push_back(file);
    } else {
      report.notes.push_back(who + s.error().message);
    }
    for (const std::string& n : trees[i].notes.lines) report.notes.push_back(who + n);
  }
}

}  // namespace

std::string DiagnosisFileName(std::string_view name) {
  std::string safe(name.substr(0, 200));
  for (char& c : safe) {  // ASCII only, whatever the locale
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!ok && c != '.' && c != '_' && c != '-') c = '_';
  }
  return "diagnosis-" + (safe.empty() ? std::string("_") : safe) + ".txt";
}

DiagnosisReport DiagnoseProcesses(const std::vector<DiagnosisTarget>& targets, const DiagnosisOptions& options) {
  DiagnosisReport report;
  try {
    Diagnose(targets, options, report);
  } catch (const std::exception& e) {  // memory: the caller must still go on to the kill
    report.notes.push_back(std::string("diagnosis stopped: ") + e.what());
  }
  return report;
}

}  // namespace ix
