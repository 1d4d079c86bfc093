// StepSupervisor: the heart of ix-stepd. Starts the processes of a
// LaunchPlan (engines, then router), each in its own process group with the
// plan's exact argv and environment (a rank-process engine also gets
// CUDA_VISIBLE_DEVICES narrowed to its rank's GPUs), logs to the result
// directory and its placement applied before exec, what it got read back
// into placement-obtained.json; waits until every readiness check passes;
// then watches until the step ends. Any exit of a started process, or of a
// descendant that existed at readiness (vLLM's EngineCore), and N failed
// health probes in a row, are failures: the client tasks are killed, every
// started tree is stopped, failure.json is written and Run returns non-zero.
//
// Events (started, placement, ready, failure, finished) go to the node
// agent's socket when one is configured.
//
// Invariant: after Run returns, nothing it started is left running.
#pragma once

#include <sys/types.h>

#include <csignal>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "core/binding.h"
#include "core/launch_plan.h"
#include "core/result.h"

namespace ix {

struct SupervisorOptions {
  std::string run_dir;     // state: state, failure.json, events
  std::string result_dir;  // server.log, router.log, failure.json
  std::chrono::milliseconds ready_timeout{std::chrono::hours(1)};
  std::chrono::milliseconds probe_interval{20};   // while waiting for readiness
  std::chrono::milliseconds health_interval{250}; // once ready
  int health_failures = 3;                        // consecutive failed probes = failure
  std::chrono::milliseconds stop_grace{3000};
  std::vector<pid_t> client_pids;  // killed on failure (the step's tasks)
  int ready_fd = -1;               // gets "ready\n" or "failed: REASON\n", then closed
  // Per process name: where to bind it (from the placement), or none.
  std::vector<std::pair<std::string, BindingTarget>> bindings;
  std::string agent_socket;  // events for the node agent; "" = none
  std::string step;          // "JOB.STEP", carried by every event
};

// Runs the step until a failure or until `*stop_requested` turns true
// (SIGTERM). Returns 0 when stopped on request, 1 after a failure.
int RunSupervisor(const LaunchPlan& plan, const SupervisorOptions& options,
                  volatile const sig_atomic_t* stop_requested);

// failure.json: which process, pid, exit status or signal, why, the last
// lines of its log, and the time.
std::string FailureJson(const std::string& process, pid_t pid, const std::string& reason,
                        const std::string& log_tail);

// CUDA_VISIBLE_DEVICES for a process serving `gpus` (step-local indices)
// when the step sees `visible` ("" or unset: the indices themselves).
std::string NarrowVisibleDevices(const std::optional<std::string>& visible, const std::vector<int64_t>& gpus);

// The last `lines` lines of a file ("" when unreadable).
std::string LogTail(const std::string& path, int lines);

}  // namespace ix
