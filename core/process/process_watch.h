// ProcessWatch: waiting for the first exit among a set of processes, with
// pidfds (Linux >= 5.3). Our own children report their exit status; other
// processes (descendants such as vLLM's EngineCore, which are children of
// our children) report only that they exited. Any exit counts, status 0
// included: a server that exits cleanly while the step runs has failed it.
// docs/PROCESS.md.
//
// Invariants: every watched process is held by a pidfd opened after its
// identity (pid + start time) was checked, so a recycled pid is never
// mistaken for it; each exit is reported once, and its process is then no
// longer watched. A process that is already gone when it is added is
// reported by the next Wait. Exit statuses of children are read with
// WNOWAIT: the child stays a zombie, so its pid and process group cannot be
// reused until StopTree (or the caller) reaps it.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/base/proc_fs.h"
#include "core/base/result.h"
#include "core/process/process_stop.h"  // HeldProcess

namespace ix {

// How a watched process ended. The status fields mean something only when
// status_known: then either exited (with exit_code) or signal is set.
struct ProcessExit {
  std::string label;
  ProcessId id;
  bool status_known = false;  // only for our own children
  bool exited = false;        // exited normally with exit_code
  int exit_code = 0;
  int signal = 0;             // killed by this signal
  bool core_dumped = false;
  // "engine (pid 12) exited with status 0", "engine (pid 12) was killed by
  // signal 9 (SIGKILL)", "engine/EngineCore_DP0 (pid 15) exited (status
  // unknown: not our child)".
  std::string Describe() const;
};

// "engine/EngineCore_DP0": the label for a descendant of `root_label`.
std::string DescendantLabel(const std::string& root_label, const ProcessInfo& p);

class ProcessWatch {
 public:
  // An Error when this kernel has no pidfd_open (ENOSYS: Linux < 5.3).
  static Result<ProcessWatch> Create();
  ProcessWatch(ProcessWatch&& other) noexcept;
  ProcessWatch& operator=(ProcessWatch&& other) noexcept;
  ProcessWatch(const ProcessWatch&) = delete;
  ProcessWatch& operator=(const ProcessWatch&) = delete;
  ~ProcessWatch();

  // A child of this process (Spawn's result): its exit status is reported.
  Status AddChild(const ProcessId& id, std::string label);
  // Any other process: only the fact that it exited is reported.
  Status Add(const ProcessId& id, std::string label);
  // Adds every current, running descendant of `root` that `filter` accepts
  // (all when it is empty), labelled DescendantLabel, and returns those
  // added, e.g. to pass to StopTree as `known` later. Zombies are skipped:
  // they exited before the watch began.
  Result<std::vector<ProcessInfo>> AddDescendants(
      pid_t root, const std::string& root_label,
      const std::function<bool(const ProcessInfo&)>& filter = nullptr);

  // The first exit among the watched processes, or nullopt when `timeout`
  // passes first (negative: wait as long as it takes), when a signal
  // handler ran (so the caller sees its flag at once: a SIGTERM handler
  // installed without SA_RESTART) or nothing is watched (at once). An
  // Error only when epoll_wait fails (other than EINTR).
  Result<std::optional<ProcessExit>> Wait(std::chrono::milliseconds timeout);
  // Readable whenever Wait(0) has an exit to report; for the caller's own
  // poll loop. Owned by the watch.
  int fd() const { return epoll_fd_; }
  // Processes still watched (added, exit not yet reported).
  size_t size() const { return entries_.size(); }
  // The same with their pidfds (owned by the watch), for a stop that
  // cannot read /proc (StopTree's `held`).
  std::vector<HeldProcess> Held() const;
  bool Watching(pid_t pid) const;

 private:
  struct Entry {
    std::string label;
    ProcessId id;
    bool child = false;
  };
  ProcessWatch(int epoll_fd, int event_fd) : epoll_fd_(epoll_fd), event_fd_(event_fd) {}
  Status AddOne(const ProcessId& id, std::string label, bool child);
  void Queue(ProcessExit exit);
  ProcessExit Collect(int pidfd, const Entry& e);
  void Close();

  int epoll_fd_ = -1;
  int event_fd_ = -1;             // readable while `pending_` is not empty
  std::map<int, Entry> entries_;  // by pidfd
  std::deque<ProcessExit> pending_;
};

}  // namespace ix
