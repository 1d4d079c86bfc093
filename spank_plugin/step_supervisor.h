// StepSupervisor: the heart of ix-stepd. Writes a KV offload tier's files
// into the result directory and starts the processes of a LaunchPlan (a
// tier's servers, ready before anything else starts; then the engines and
// the router), each in its own process group with the
// plan's exact argv and environment (a rank-process engine also gets
// CUDA_VISIBLE_DEVICES narrowed to its rank's GPUs), logs to the result
// directory and its placement applied before exec, what it got read back
// into placement-obtained.json; waits until every readiness check passes;
// then watches until the step ends. Any exit of a started process, or of a
// descendant that existed at readiness (vLLM's EngineCore), and N failed
// health probes in a row, are failures, and so is a hang under the plan's
// policy (step_hang.h; diagnosed first): the client tasks are killed, every
// started tree is stopped, failure.json is written and Run returns non-zero.
//
// Events (started, placement, ready, failure, finished) go to the node
// agent's socket when one is configured.
//
// On a node after the head of a multi-node step (plan.node_rank > 0) the
// engine serves no API: it is ready once this node holds a TCP connection to
// the head (kConnected), and its part ends normally (the local tasks run on)
// when the engine exits with status 0 or that connection is gone for
// `health_failures` probes: the head ended the step, and reports its own
// failures.
//
// Invariant: after Run returns, nothing it started is left running.
#pragma once

#include <sys/types.h>

#include <csignal>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "core/node/binding.h"
#include "core/recipe/launch_plan.h"
#include "core/base/result.h"

namespace ix {

struct SupervisorOptions {
  // The step's directories as descriptors (-1 = none), opened at start, so
  // that every write still lands after the container's rootfs, and every
  // mount in it, is removed under ix-stepd. The names are for messages.
  int run_dir_fd = -1;     // state, failure.json, placement-obtained.json
  std::string run_dir;
  int result_dir_fd = -1;  // server.log, router.log, failure.json; the servers' working directory
  std::string result_dir;
  std::chrono::milliseconds ready_timeout{std::chrono::hours(1)};
  std::chrono::milliseconds probe_interval{20};   // while waiting for readiness
  std::chrono::milliseconds health_interval{250}; // once ready
  int health_failures = 3;                        // consecutive failed probes = failure
  std::chrono::milliseconds stop_grace{3000};
  std::vector<pid_t> client_pids;  // killed on failure (the step's tasks)
  // The first client's exit starts the stop at once (the step is over), before
  // Slurm runs any task_exit hook (Pyxis's removes the container).
  bool stop_with_client = false;
  // The step's slurmstepd (0 = none). Killed, it can no longer end the step
  // (no task_exit, no exit hook, no signal from scancel), so its death ends
  // it here: the client tasks and what they started are killed, the servers
  // stopped, and the step fails naming it.
  pid_t owner_pid = 0;
  int ready_fd = -1;               // gets "ready\n" or "failed: REASON\n", then closed
  // Per process name: where to bind it (from the placement), or none.
  std::vector<std::pair<std::string, BindingTarget>> bindings;
  std::string agent_socket;  // events for the node agent; "" = none
  int agent_fd = -1;         // a socket connected to the agent's (taken over); -1 = none
  std::string step;          // "JOB.STEP", carried by every event
  std::string sweep;         // the sweep and entry events belong to ("" / -1: none)
  int64_t entry = -1;
  std::vector<int> node_gpus;  // the step's GPUs (NVML indices) for the agent's gpu_metrics.csv
  std::string node_name;       // this node, named in failure.json of a step across nodes
};

// Runs the step until a failure (the owner's death is one), until
// `*stop_requested` turns true (SIGTERM) or, with stop_with_client, until
// the client exits. Returns 0
// when stopped so, 1 after a failure.
int RunSupervisor(const LaunchPlan& plan, const SupervisorOptions& options,
                  volatile const sig_atomic_t* stop_requested);

}  // namespace ix
