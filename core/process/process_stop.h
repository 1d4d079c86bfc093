// Stopping a whole process tree so nothing outlives a step: SIGTERM, a
// grace, SIGKILL, a wait; through /proc when it can be read, blind through
// held pidfds and process groups when it cannot. docs/PROCESS.md.
//
// The OS is behind an interface (ProcessSystem), so the logic is tested
// with a fake (fake_process_system.h).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "core/base/proc_fs.h"  // ProcessId, ProcessInfo
#include "core/base/result.h"

namespace ix {

// A process known by a pidfd taken while its identity could still be
// checked (ProcessWatch holds one for each process it watches): it can be
// signalled, and seen to exit, without /proc. The pidfd stays its owner's.
struct HeldProcess {
  std::string label;
  ProcessId id;
  int pidfd = -1;
};

// The OS as StopTree needs it, so the logic is testable with a fake.
class ProcessSystem {
 public:
  virtual ~ProcessSystem() = default;
  virtual Result<std::vector<ProcessInfo>> Snapshot() = 0;
  // Through a held pidfd: 0, ESRCH once it has exited, or another errno.
  virtual int SignalHeld(int pidfd, int sig) = 0;
  // Whether the process behind a held pidfd has exited (a zombie has).
  virtual bool HeldExited(int pidfd) = 0;
  // Sends `sig` to exactly that process: 0, or ESRCH when it is gone or its
  // pid now belongs to another process, or another errno.
  virtual int Signal(const ProcessId& id, int sig) = 0;
  virtual int SignalGroup(pid_t pgid, int sig) = 0;
  virtual void Reap(pid_t pid) = 0;  // waitpid(pid, WNOHANG) of a zombie child
  virtual pid_t Self() = 0;
  virtual std::chrono::steady_clock::time_point Now() = 0;
  virtual void Sleep(std::chrono::milliseconds d) = 0;
};
// The real one: /proc, pidfd_send_signal (kill after an identity check where
// pidfds are missing), waitpid, the steady clock.
ProcessSystem& RealProcessSystem();

// How long StopTree waits. Invariant: all positive; poll <= max_poll. A
// large process (pinned host memory, GPU contexts) can take seconds to exit
// even after SIGKILL: give kill_wait room.
struct StopOptions {
  std::chrono::milliseconds grace{5000};      // SIGTERM to SIGKILL
  std::chrono::milliseconds kill_wait{5000};  // after SIGKILL, before giving up
  std::chrono::milliseconds poll{5};          // first look-again delay, doubling ...
  std::chrono::milliseconds max_poll{100};    // ... up to this
};

// What StopTree did. A process is in `terminated` when it was sent SIGTERM,
// in `killed` when it was still there after the grace (or appeared later)
// and was sent SIGKILL, in `left` when it survived the kill wait too
// (uninterruptible sleep). Zombies count as gone.
struct StopReport {
  std::vector<ProcessInfo> terminated;
  std::vector<ProcessInfo> killed;
  std::vector<ProcessInfo> left;
  std::vector<pid_t> groups;        // process groups that were signalled
  std::vector<std::string> errors;  // e.g. /proc could not be read
  std::chrono::milliseconds elapsed{0};
  bool clean() const { return left.empty() && errors.empty(); }
  // "stopped 3 processes in 0.210 s; SIGTERM: sh (12), sleep (14); SIGKILL: sleep (14)"
  std::string Summary() const;
};

// Stops `roots` (processes we started, each leading its own process group)
// and everything that belongs to them: their live descendants, members of
// their process groups, and `known` (descendants seen earlier, which may
// have called setsid and been reparented since). SIGTERM (and SIGCONT) to
// each, then SIGKILL to whatever is still there after the grace, then waits
// until none is left, reaping our own children on the way. New descendants
// found while waiting are signalled too. Never signals the caller or pid 1.
//
// When /proc cannot be read (a container's /proc detached under us), it
// stops blind rather than not at all: the same TERM, grace, KILL to every
// `held` process through its pidfd and to the process group of every root
// (still ours: a root is our unreaped child, so its pid is not reused),
// judging "gone" by the pidfds alone; the error is in the report.
StopReport StopTree(const std::vector<ProcessId>& roots, const std::vector<ProcessId>& known,
                    const StopOptions& options, ProcessSystem& system,
                    const std::vector<HeldProcess>& held = {});
StopReport StopTree(const std::vector<ProcessId>& roots, const std::vector<ProcessId>& known = {},
                    const StopOptions& options = {}, const std::vector<HeldProcess>& held = {});

}  // namespace ix
