#include "core/process/process_stop.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <set>
#include <thread>
#include <tuple>
#include <utility>

#include "core/base/unique_fd.h"
#include "core/process/pidfd.h"

namespace ix {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

bool Contains(const std::vector<ProcessInfo>& v, const ProcessId& id) {
  return std::any_of(v.begin(), v.end(), [&](const ProcessInfo& p) { return p.id() == id; });
}

void AddGroup(std::vector<pid_t>& groups, pid_t g) {
  if (std::find(groups.begin(), groups.end(), g) == groups.end()) groups.push_back(g);
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
    UniqueFd fd(PidfdOpen(id.pid));
    if (!fd.valid() && errno != ENOSYS) return errno;
    // With a pidfd the check and the signal are about the same process.
    Result<ProcessInfo> now = ReadProcessInfo(id.pid);
    if (!now || now.value().start_time != id.start_time) return ESRCH;
    if (fd.valid()) return PidfdSendSignal(fd.get(), sig) == 0 ? 0 : errno;
    return ::kill(id.pid, sig) == 0 ? 0 : errno;
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
  Clock::time_point Now() override { return Clock::now(); }
  void Sleep(milliseconds d) override { std::this_thread::sleep_for(d); }
};

// One look at the machine for StopTree: the live processes that belong to
// the stop (known identities, members of a group that is still ours, and
// their descendants), with our own zombie children reaped. Invariant: the
// identities only grow (a member seen once stays known after it moves).
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
    FindLiveGroups(t, self);
    std::vector<ProcessInfo> out = Members(t, self);
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

  // A group is still ours while one of its members (a zombie counts: it
  // holds the pid) is a process we know: its id cannot have been reused.
  void FindLiveGroups(const std::vector<ProcessInfo>& t, pid_t self) {
    live_groups_.clear();
    for (const ProcessInfo& p : t) {
      if (groups_.count(p.pgid) && ids_.count(Key(p.id()))) live_groups_.insert(p.pgid);
    }
    for (const ProcessInfo& p : t) {
      if (p.pid == self) live_groups_.erase(p.pgid);  // never our own group
    }
  }

  // The known processes and the members of live groups, then their
  // descendants breadth first; never pid 1, the caller or a zombie.
  std::vector<ProcessInfo> Members(const std::vector<ProcessInfo>& t, pid_t self) const {
    std::set<pid_t> members;
    std::vector<ProcessInfo> out;
    auto take = [&](const ProcessInfo& p) {
      if (p.pid <= 1 || p.pid == self || p.exited() || members.count(p.pid)) return;
      members.insert(p.pid);
      out.push_back(p);
    };
    for (const ProcessInfo& p : t) {
      if (ids_.count(Key(p.id())) || live_groups_.count(p.pgid)) take(p);
    }
    for (size_t i = 0; i < out.size(); ++i) {
      const pid_t parent = out[i].pid;
      for (const ProcessInfo& p : t) {
        if (p.ppid == parent) take(p);
      }
    }
    return out;
  }

  std::set<std::pair<pid_t, uint64_t>> ids_;
  std::set<pid_t> groups_;
  std::set<pid_t> live_groups_;
};

// How a phase of the stop ended.
enum class Phase { kAllGone, kStillThere, kProcLost };

// StopTree through /proc: the members of the last look, and the steps of
// the stop. Writes into the caller's report.
class TreeStop {
 public:
  TreeStop(const std::vector<ProcessId>& roots, const std::vector<ProcessId>& known, const StopOptions& options,
           ProcessSystem& sys, StopReport& report)
      : membership_(roots, known), options_(options), sys_(sys), report_(report) {}

  // Looks again; false (the error noted once) when /proc cannot be read.
  bool Scan() {
    Result<std::vector<ProcessInfo>> m = membership_.Scan(sys_);
    if (!m) {
      if (report_.errors.empty() || report_.errors.back() != m.error().message) {
        report_.errors.push_back(m.error().message);
      }
      return false;
    }
    members_ = std::move(m).value();
    return true;
  }

  // SIGTERM to everyone, then looks again until all are gone or the grace
  // ends, signalling anything new.
  Phase Grace() {
    bool done = members_.empty();
    TermNew();
    const auto end = sys_.Now() + options_.grace;
    auto delay = FirstDelay();
    while (!done) {
      SleepStep(delay, end);
      if (!Scan()) return Phase::kProcLost;
      done = members_.empty();
      if (!done) TermNew();
      if (sys_.Now() >= end) break;
    }
    return done ? Phase::kAllGone : Phase::kStillThere;
  }

  // SIGKILL to whatever is there, again at each look, until all are gone
  // or the kill wait ends (what is left then goes into the report).
  Phase Kill() {
    const auto end = sys_.Now() + options_.kill_wait;
    auto delay = FirstDelay();
    for (;;) {
      KillAll();
      SleepStep(delay, end);
      if (!Scan()) return Phase::kProcLost;
      if (members_.empty()) return Phase::kAllGone;
      if (sys_.Now() >= end) break;
    }
    report_.left = members_;
    return Phase::kStillThere;
  }

 private:
  milliseconds FirstDelay() const { return std::max(options_.poll, milliseconds(1)); }

  // SIGTERM (then SIGCONT: a stopped process acts on TERM only when
  // continued) to each member not sent it yet, and to the live groups.
  void TermNew() {
    for (const ProcessInfo& p : members_) {
      if (Contains(report_.terminated, p.id())) continue;
      if (sys_.Signal(p.id(), SIGTERM) == 0) {
        sys_.Signal(p.id(), SIGCONT);
        report_.terminated.push_back(p);
      }
    }
    for (pid_t g : membership_.live_groups()) {
      if (sys_.SignalGroup(g, SIGTERM) == 0) {
        sys_.SignalGroup(g, SIGCONT);
        AddGroup(report_.groups, g);
      }
    }
  }

  void KillAll() {
    for (const ProcessInfo& p : members_) {
      if (!Contains(report_.killed, p.id()) && sys_.Signal(p.id(), SIGKILL) == 0) report_.killed.push_back(p);
    }
    for (pid_t g : membership_.live_groups()) {
      if (sys_.SignalGroup(g, SIGKILL) == 0) AddGroup(report_.groups, g);
    }
  }

  // Sleeps `delay` (at least 1 ms, never past `until`), then doubles it up
  // to max_poll.
  void SleepStep(milliseconds& delay, Clock::time_point until) {
    const auto now = sys_.Now();
    if (now >= until) return;
    auto d = std::min<Clock::duration>(delay, until - now);
    sys_.Sleep(std::max(milliseconds(1), std::chrono::duration_cast<milliseconds>(d)));
    delay = std::min(delay * 2, options_.max_poll);
  }

  Membership membership_;
  const StopOptions& options_;
  ProcessSystem& sys_;
  StopReport& report_;
  std::vector<ProcessInfo> members_;
};

// StopTree without /proc (see process_stop.h): the held pidfds and the
// roots' process groups are all it has. Writes into the caller's report.
class BlindStop {
 public:
  BlindStop(const std::vector<ProcessId>& roots, const std::vector<HeldProcess>& held, const StopOptions& options,
            ProcessSystem& sys, StopReport& report)
      : roots_(roots), held_(held), options_(options), sys_(sys), report_(report) {}

  void Run() {
    std::vector<ProcessInfo> ignored;
    SignalAll(SIGTERM, report_.terminated);
    SignalAll(SIGCONT, ignored);
    WaitUntil(sys_.Now() + options_.grace);
    // The groups may hold processes no pidfd knows: they get the KILL too.
    SignalAll(SIGKILL, report_.killed);
    WaitUntil(sys_.Now() + options_.kill_wait);
    for (const HeldProcess& h : held_) {
      if (!sys_.HeldExited(h.pidfd)) report_.left.push_back(AsInfo(h));
    }
  }

 private:
  static ProcessInfo AsInfo(const HeldProcess& h) {
    ProcessInfo p;
    p.pid = h.id.pid;
    p.start_time = h.id.start_time;
    p.comm = h.label;
    return p;
  }

  // `sig` to every root's group and every held process still there; those
  // go into `into` (once).
  void SignalAll(int sig, std::vector<ProcessInfo>& into) {
    // Who is alive before the groups' signal, which may end some of them
    // before their own: each of those got `sig`, one way or the other.
    std::vector<const HeldProcess*> alive;
    for (const HeldProcess& h : held_) {
      if (h.id.pid > 1 && !sys_.HeldExited(h.pidfd)) alive.push_back(&h);
    }
    for (const ProcessId& r : roots_) {
      if (r.pid > 1 && r.pid != sys_.Self() && sys_.SignalGroup(r.pid, sig) == 0) AddGroup(report_.groups, r.pid);
    }
    for (const HeldProcess* h : alive) {
      (void)sys_.SignalHeld(h->pidfd, sig);  // ESRCH: its group's signal was first
      if (!Contains(into, h->id)) into.push_back(AsInfo(*h));
    }
  }

  bool AllGone() {
    return std::all_of(held_.begin(), held_.end(), [&](const HeldProcess& h) { return sys_.HeldExited(h.pidfd); });
  }

  void WaitUntil(Clock::time_point end) {
    auto delay = std::max(options_.poll, milliseconds(1));
    while (!AllGone() && sys_.Now() < end) {
      sys_.Sleep(std::min(delay, std::chrono::duration_cast<milliseconds>(end - sys_.Now()) + milliseconds(1)));
      delay = std::min(delay * 2, options_.max_poll);
    }
  }

  const std::vector<ProcessId>& roots_;
  const std::vector<HeldProcess>& held_;
  const StopOptions& options_;
  ProcessSystem& sys_;
  StopReport& report_;
};

}  // namespace

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

StopReport StopTree(const std::vector<ProcessId>& roots, const std::vector<ProcessId>& known,
                    const StopOptions& options, ProcessSystem& sys, const std::vector<HeldProcess>& held) {
  StopReport report;
  const auto start = sys.Now();
  TreeStop stop(roots, known, options, sys, report);
  Phase phase = stop.Scan() ? stop.Grace() : Phase::kProcLost;
  if (phase == Phase::kStillThere) phase = stop.Kill();
  // Blind rather than not at all: /proc was unreadable from the start, or
  // became so during the stop.
  if (phase == Phase::kProcLost) BlindStop(roots, held, options, sys, report).Run();
  report.elapsed = std::chrono::duration_cast<milliseconds>(sys.Now() - start);
  return report;
}

StopReport StopTree(const std::vector<ProcessId>& roots, const std::vector<ProcessId>& known,
                    const StopOptions& options, const std::vector<HeldProcess>& held) {
  return StopTree(roots, known, options, RealProcessSystem(), held);
}

}  // namespace ix
