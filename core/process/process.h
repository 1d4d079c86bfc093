// Process: starting one program exactly as a launch plan says (fork +
// execve, no shell), reading the process tree from /proc, and stopping a
// whole tree so nothing outlives a step. docs/PROCESS.md.
//
// Spawn prepares everything in the parent (argv/envp arrays, PATH
// candidates, the log and /dev/null descriptors, the groups array, the
// binding masks); the child between fork and execve only makes
// async-signal-safe system calls and allocates nothing. A failure there
// comes back through a close-on-exec pipe as (step, errno), so Spawn returns
// an Error that says which step failed and why.
//
// Processes are identified by (pid, start time): /proc/PID/stat field 22
// does not change at execve and differs for a recycled pid.
#pragma once

#include <fcntl.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/node/binding.h"
#include "core/recipe/launch_plan.h"
#include "core/base/proc_fs.h"  // ProcessId, ProcessInfo, ListProcesses
#include "core/base/result.h"

namespace ix {

// ---- environment ------------------------------------------------------------

// This process's environment as NAME=VALUE strings, in order.
std::vector<std::string> CurrentEnvironment();
// `base` (NAME=VALUE strings) with `adds` applied in order: an entry whose
// name is already present replaces that value in place, a new name is
// appended; later entries win. Names are unique in the result (a name
// repeated in `base` keeps its first position and the last value).
std::vector<std::string> BuildEnvironment(const std::vector<std::string>& base, const EnvList& adds);
// The value of NAME in an environment, as getenv would find it (first entry).
std::optional<std::string> FindEnv(const std::vector<std::string>& env, std::string_view name);

// ---- spawning ---------------------------------------------------------------

// Who the child runs as. Applied only when the caller is root (setgroups,
// then setresgid, then setresuid, each checked); a non-root caller may ask
// only for its own uid and gid, which changes nothing.
struct Credentials {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary groups; empty = none
};

// One program to start. Invariants checked by Spawn: argv is non-empty and
// argv[0] is not empty; no string holds a NUL byte; every env entry has a
// NAME before its '='.
struct SpawnSpec {
  std::string name;                // "engine": prefixes every error
  std::vector<std::string> argv;   // exact; argv[0] is looked up in env's PATH unless it has a '/'
  std::vector<std::string> env;    // the whole environment of the child (BuildEnvironment)
  std::string cwd;                 // "" = the caller's working directory
  int cwd_fd = -1;                 // else this directory (a descriptor), if >= 0
  std::string log_path;            // stdout and stderr, appended; "" = /dev/null
  int log_dir_fd = AT_FDCWD;       // a relative log_path is under this directory (a descriptor)
  std::optional<Credentials> credentials;
  const PreparedBinding* binding = nullptr;  // applied before exec; must outlive Spawn
  bool binding_best_effort = false;  // true: a failed binding is recorded, the child runs unbound
  int parent_death_signal = 0;       // e.g. SIGKILL: PR_SET_PDEATHSIG; 0 = off
};


// A started process. It leads its own process group (pgid == id.pid) and
// is a child of the caller until someone reaps it.
struct SpawnedProcess {
  std::string name;
  ProcessId id;
  std::string binding_error;  // set only when binding_best_effort and the binding failed
};

// Starts spec.argv. The child: default signal dispositions and an empty
// signal mask, its own process group, stdin from /dev/null, stdout and stderr
// to the log (opened O_APPEND|O_CREAT 0644 by the caller, chowned to the
// target user when switching; a symlink, FIFO or anything but a regular file
// there is refused, without blocking), every other descriptor closed, the binding,
// the credentials, the working directory (entered as the target user), the
// parent-death signal, then execve of the first PATH candidate that runs.
// Errors read like `engine: cannot execute 'vllm': No such file or directory
// (PATH=/usr/bin:/bin)`.
Result<SpawnedProcess> Spawn(const SpawnSpec& spec);

// ---- the process tree -------------------------------------------------------

// Every function here reads /proc through ProcDirFd() (core/base/proc_fs.h).

// The descendants of `root` in `table` by parent pid, breadth first
// (children before grandchildren), `root` itself excluded. Pure.
std::vector<ProcessInfo> DescendantsIn(const std::vector<ProcessInfo>& table, pid_t root);
// The same on the live machine.
Result<std::vector<ProcessInfo>> ListDescendants(pid_t root);
// Whether `id` still names a running (not exited) process.
bool IsRunning(const ProcessId& id);

// ---- stopping ---------------------------------------------------------------

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
