// FakeSystem: a ProcessSystem over a fake process table, so StopTree's
// logic is tested without real processes or a clock.
#pragma once

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/process/process.h"

namespace ix {

// A fake process table. Signals act at once: TERM ends a process unless it
// ignores TERM, KILL always; an ended process becomes a zombie of its
// parent (orphans go to pid 1, whose zombies stay until the test says).
// Two knobs play what the real OS can do mid-stop: /proc goes away
// (lose_proc), and processes in uninterruptible sleep (stuck).
class FakeSystem final : public ProcessSystem {
 public:
  struct Proc {
    ProcessInfo info;
    bool ignores_term = false;
    std::vector<ProcessInfo> spawn_on_term;  // forks these when it gets TERM
  };
  std::map<pid_t, Proc> procs;
  std::vector<std::pair<pid_t, int>> signals;        // (pid, sig)
  std::vector<std::pair<pid_t, int>> group_signals;  // (pgid, sig)
  std::chrono::steady_clock::time_point now{};
  std::vector<pid_t> reaped;
  bool proc_gone = false;             // Snapshot fails, as with /proc detached
  bool lose_proc = false;             // proc_gone becomes true after the next Snapshot
  bool stuck = false;                 // every signal is accepted and changes nothing; no exit, no reap
  std::map<int, pid_t> pidfds;        // held pidfd -> pid

  void Add(pid_t pid, pid_t ppid, pid_t pgid, std::string comm, uint64_t start, bool ignores_term = false) {
    Proc p;
    p.info.pid = pid;
    p.info.ppid = ppid;
    p.info.pgid = pgid;
    p.info.sid = pgid;
    p.info.state = 'S';
    p.info.comm = std::move(comm);
    p.info.start_time = start;
    p.ignores_term = ignores_term;
    procs[pid] = p;
  }

  Result<std::vector<ProcessInfo>> Snapshot() override {
    if (proc_gone) return Error{"cannot list /proc: No such file or directory"};
    std::vector<ProcessInfo> out;
    for (const auto& [pid, p] : procs) out.push_back(p.info);
    if (lose_proc) proc_gone = true;
    return out;
  }
  void End(pid_t pid) {
    Proc& p = procs[pid];
    p.info.state = 'Z';
    for (auto& [other, q] : procs) {
      if (q.info.ppid == pid && !q.info.exited()) q.info.ppid = 1;
    }
  }
  void Deliver(pid_t pid, int sig) {
    Proc& p = procs[pid];
    if (p.info.exited()) return;
    if (sig == SIGTERM) {
      for (const ProcessInfo& c : p.spawn_on_term) procs[c.pid] = Proc{c, false, {}};
      p.spawn_on_term.clear();
      if (!p.ignores_term) End(pid);
    }
    if (sig == SIGKILL) End(pid);
  }
  int Signal(const ProcessId& id, int sig) override {
    if (stuck) return 0;
    auto it = procs.find(id.pid);
    if (it == procs.end() || it->second.info.start_time != id.start_time) return ESRCH;
    signals.emplace_back(id.pid, sig);
    Deliver(id.pid, sig);
    return 0;
  }
  int SignalGroup(pid_t pgid, int sig) override {
    if (stuck) return 0;
    group_signals.emplace_back(pgid, sig);
    bool any = false;
    for (auto& [pid, p] : procs) {
      if (p.info.pgid == pgid) {
        Deliver(pid, sig);
        any = true;
      }
    }
    return any ? 0 : ESRCH;
  }
  int SignalHeld(int pidfd, int sig) override {
    if (stuck) return 0;
    if (HeldExited(pidfd)) return ESRCH;
    signals.emplace_back(pidfds[pidfd], sig);
    Deliver(pidfds[pidfd], sig);
    return 0;
  }
  bool HeldExited(int pidfd) override {
    if (stuck) return false;
    auto it = procs.find(pidfds.count(pidfd) ? pidfds[pidfd] : -1);
    return it == procs.end() || it->second.info.exited();
  }
  void Reap(pid_t pid) override {
    if (stuck) return;
    reaped.push_back(pid);
    procs.erase(pid);
  }
  pid_t Self() override { return 100; }
  std::chrono::steady_clock::time_point Now() override { return now; }
  void Sleep(std::chrono::milliseconds d) override { now += d; }

  bool Signalled(pid_t pid, int sig) const {
    return std::find(signals.begin(), signals.end(), std::make_pair(pid, sig)) != signals.end();
  }
};

// The pids of `v`, sorted: for comparing what a stop signalled.
inline std::vector<pid_t> SortedPids(const std::vector<ProcessInfo>& v) {
  std::vector<pid_t> out;
  for (const ProcessInfo& p : v) out.push_back(p.pid);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace ix
