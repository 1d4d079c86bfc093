// StepdLaunch: how local task 0 starts ix-stepd and how every task learns
// that the servers are ready, without any path inside the task's mount
// namespace (under Pyxis the task already runs in the container, where
// neither ix-stepd nor the run directory exists). slurmstepd opens both on
// the host (OpenStepdHandles, before any task forks); the task executes
// ix-stepd from its descriptor (execveat) and hands it the run directory as
// descriptor 4. The descriptors are close-on-exec: the client never sees
// them.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "core/base/result.h"

namespace ix {

// Descriptors slurmstepd opens for the step; -1 = not open.
struct StepdHandles {
  int exe_fd = -1;      // ix-stepd (O_PATH), a regular file
  int run_dir_fd = -1;  // the step's run directory
  int agent_fd = -1;    // a datagram socket connected to the node agent's (ConnectAgentSocket)
};

// The descriptor numbers ix-stepd gets.
constexpr int kStepdReadyFd = 3;   // "ready\n" or "failed: ...\n"
constexpr int kStepdRunDirFd = 4;  // --run-dir-fd
// (5 is ix-stepd's own executable while it is executed)
constexpr int kStepdAgentFd = 6;   // --agent-fd, when the agent's socket was connected

// Opens `stepd`, which must be a regular, executable file (O_PATH).
Result<int> OpenStepdExe(const std::string& stepd);
// The same and the run directory `run_dir` (not through a symlink).
Result<StepdHandles> OpenStepdHandles(const std::string& stepd, const std::string& run_dir);
void CloseStepdHandles(StepdHandles& h);

// A datagram socket connected to the node agent's socket at `path`, made
// here on the host so that ix-stepd can send from a container where the
// path does not exist; -1 when there is no agent listening (events are
// then lost, never the step).
int ConnectAgentSocket(const std::string& path);

// A started ix-stepd: its pid and the read end of its ready pipe.
struct LaunchedStepd {
  pid_t pid = 0;
  int ready_fd = -1;
};

// Starts ix-stepd from h.exe_fd with `argv` and `envp`: stdin empty, stdout
// and stderr appended to stepd.log in the run directory, the ready pipe on
// kStepdReadyFd, the run directory on kStepdRunDirFd, the agent's socket (if
// connected) on kStepdAgentFd, nothing else open.
// The error says which step failed, e.g. "cannot execute ix-stepd: Exec
// format error".
Result<LaunchedStepd> LaunchStepd(const StepdHandles& h, const std::vector<std::string>& argv, char* const* envp);

// Reads the ready pipe to its end and closes it: "ready", "failed: ...", or
// "" when ix-stepd exited without a word.
std::string ReadReadyAnswer(int fd);

// For the other local tasks: waits until the run directory's `state` says
// "ready" (Ok) or "failed", or ix-stepd (stepd.pid) is gone without saying
// "ready", or `deadline` passes (Errors saying which).
Status WaitForStepd(int run_dir_fd, std::chrono::steady_clock::time_point deadline);

}  // namespace ix
