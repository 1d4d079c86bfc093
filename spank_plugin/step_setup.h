// StepSetup: what the slurmstepd side of the plugin decides for one step
// before any task starts — the plan with leased ports, the placement under
// the step's strict/warn policy and the per-process bindings — and what
// follows from it: the ix-stepd command line and the variables exported to
// the tasks. Pure data and functions, so they are tested without Slurm;
// slurmstepd_side.cc does the Slurm calls and hands the results in.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/base/result.h"
#include "core/node/binding.h"
#include "core/node/placement.h"
#include "core/node/topology.h"
#include "core/recipe/launch_plan.h"
#include "core/recipe/recipe.h"
#include "spank_plugin/memlock_policy.h"

namespace ix {

struct StepSetup {
  std::string step_id;  // "JOB.STEP"
  std::string recipe_dir, recipe;
  RenderRequest request;  // arm, conc, eval-only, leased ports (and step ports), node rank, head
  PortList step_ports;    // across nodes: Slurm's reserved ports of the step, the same on every node
  LaunchPlan plan;
  std::vector<std::pair<std::string, BindingTarget>> bindings;
  std::vector<std::string> placement_notes;  // problems accepted under warn
  std::string run_dir;     // per-step state, owned by the job user
  std::string result_dir;  // logs and failure.json: IX_RESULT_DIR; "" = results/ in run_dir
  std::string agent_socket;  // the node agent's event socket; "" = none
  std::vector<int> node_gpus;  // the step's GPUs by node index (NVML's), step order; empty: unknown
  int ready_timeout_s = 3600;
};

// Bindings per started process from a placement. rank-process layout: each
// engine process to its rank's NUMA node and CPUs. engine layout: the one
// engine runs all ranks, so it is bound to the union of their CPUs and to
// their NUMA node when they share one; when they span nodes, to the CPUs
// only if the plan carries the recipe's per-worker NUMA flags
// (plan.worker_numa_flags), else an Error (never silently bind all ranks to
// one node). A KV offload tier's server (the Mooncake master) serves every
// rank: the union of their CPUs, and their NUMA node when they share one.
// Every other process (the router) gets rank 0's.
Result<std::vector<std::pair<std::string, BindingTarget>>> BindingsFor(const LaunchPlan& plan,
                                                                       const Placement& placement);

// --inferencex-placement as a policy: warn when it says so, else strict (the
// default; the value was checked with the other options).
PlacementPolicy StepPlacementPolicy(const std::optional<std::string>& option);

// Places setup.plan's ranks on `topology` and decides, under `policy`, what
// each way of falling short means: the step's GPUs could not be chosen
// (`gpus` is their Error), the placement cannot be computed, it does not fit
// (EnforcePlacement), or its bindings cannot be made (BindingsFor). strict
// refuses the step with that Error; warn adds it to setup.placement_notes
// and goes on with what there is (no placement: no bindings). `request`
// lacks only the GPUs; `memlock` (what init_post_opt did to RLIMIT_MEMLOCK)
// is recorded in the placement. When the one engine process spans NUMA
// nodes and the recipe declares engine.numa_flags, setup.plan is rendered
// again with them (setup.request.gpu_places). Fills setup.bindings; returns
// placement.json's text, "null" when nothing was placed.
Result<std::string> PlaceStep(StepSetup& setup, const Recipe& recipe, const Topology& topology,
                              const Result<StepGpus>& gpus, PlacementRequest request,
                              const MemlockDecision& memlock, PlacementPolicy policy);

// Whether the placed ranks use more than one NUMA node.
bool RanksSpanNumaNodes(const Placement& placement);
// Per step-local GPU, its rank's NUMA node and CPUs (RenderRequest::gpu_places).
std::vector<GpuPlace> GpuPlacesFor(const LaunchPlan& plan, const Placement& placement);

// argv of ix-stepd for this step (no shell): the run directory as
// descriptor `run_dir_fd` (plan.json is read through it), the result
// directory when the job set one, the bindings, the step's GPUs (node
// indices, for the agent's telemetry); with stop_with_client, ix-stepd stops
// the servers as soon as `client_pid` exits; `agent_fd` >= 0: the agent's
// socket is that inherited descriptor.
std::vector<std::string> StepdArgv(const std::string& stepd_path, const StepSetup& setup, int ready_fd,
                                   pid_t client_pid, int run_dir_fd, bool stop_with_client, int agent_fd = -1);

// What the tasks get: IX_ENDPOINT, IX_PORT, IX_PORT_<NAME>, IX_RUN_DIR,
// IX_RESULT_DIR (inferencex-JOB.STEP in the working directory when the job
// set none), IX_RECIPE/ARM/CONC, then the plan's client environment. In a
// step across nodes IX_ENDPOINT is the head's front door by its address
// (from every node), and IX_NODE_RANK, IX_NODES and IX_HEAD_ADDR are added.
EnvList TaskEnvironment(const StepSetup& setup);

// The `reason` of ix-stepd's failure.json, as one line for slurmd's log
// (a step that failed after it was ready shows in srun only as a killed
// task); nullopt when the text has none. The file is the job user's: only a
// string is taken from it, at most 1000 characters.
std::optional<std::string> FailureReason(const std::string& failure_json);

}  // namespace ix
