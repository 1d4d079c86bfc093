// Placement: where each rank of a LaunchPlan runs on this node and whether
// the host memory it needs fits. Each rank goes to the NUMA node local to its
// GPUs and gets a share of that node's CPUs the step may use; host DRAM is
// totalled per NUMA node (the plan's per-DP-rank, per-GPU and per-step needs
// times a safety factor) and compared with what each node has available, and
// /dev/shm and RLIMIT_MEMLOCK are checked. Pure logic over data: the inputs
// come from core/node/topology (hwloc, HostProbe), nothing here touches the OS.
// docs/PLACEMENT.md.
//
// Invariants of a Placement: ranks are in plan order, one per plan rank;
// each rank's numa is a node with CPUs and its cpus are non-empty, sorted and
// allowed to the step; ranks on the same node have disjoint cpus whenever the
// node has at least as many allowed cores as ranks (otherwise a note says
// they share); fits == problems.empty().
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/recipe/launch_plan.h"
#include "core/base/result.h"
#include "core/node/topology.h"

namespace ix {

// What the caller knows about the step besides the plan and the topology.
struct PlacementRequest {
  // Node-level GPU indices in step order: step-local GPU i is gpus[i]
  // (see SelectStepGpus).
  std::vector<int> step_gpus;
  // CPUs the step may use (HostProbe::AllowedCpus); empty means every CPU of
  // the topology (for XML topologies and dry runs).
  std::vector<int> allowed_cpus;
  // Multiplies every host-memory need; > 0 (1.0 = the recipe's numbers).
  double safety_factor = 1.0;
  // Whether the engine pins its host memory, so RLIMIT_MEMLOCK must cover
  // each rank's share.
  bool pinned_memory = false;
  // /dev/shm: free bytes (unset = unknown, not checked) and what the step
  // needs there (NCCL and vLLM's shared-memory queues; the default catches
  // the 64 MiB container default).
  std::optional<uint64_t> shm_free_bytes;
  uint64_t shm_needed_bytes = 1ull << 30;
  // RLIMIT_MEMLOCK of the processes to be started (unset = unknown).
  std::optional<MemlockLimit> memlock;
};

struct RankPlacement {
  int64_t rank = 0;
  std::vector<int> gpus;  // node-level GPU indices
  int numa = -1;          // NUMA node os index (CPUs and memory)
  std::vector<int> cpus;  // PU os indices
  uint64_t host_bytes = 0;  // this rank's share of host memory, safety factor included
};

// One NUMA node with CPUs: what the plan needs there and what it has.
struct NumaDemand {
  int node = -1;
  std::vector<int64_t> ranks;   // placed here
  uint64_t needed_bytes = 0;    // safety factor included
  uint64_t available_bytes = 0;
  bool available_is_free = false;  // false: free memory unknown, total used
  std::string breakdown;        // "4 ranks x 189 GiB"; "" when nothing is needed
};

struct Placement {
  std::string arm;
  double safety_factor = 1.0;
  std::vector<RankPlacement> ranks;
  std::vector<NumaDemand> numa;  // every node with CPUs, by os index
  uint64_t shm_needed_bytes = 0;
  std::optional<uint64_t> shm_free_bytes;
  bool pinned_memory = false;
  uint64_t memlock_needed_bytes = 0;  // largest per-rank host share when pinned, else 0
  std::optional<MemlockLimit> memlock;
  // What the SPANK plugin set for the tasks (nullopt: left as it was) and
  // why; empty outside a step (ixctl place).
  std::optional<MemlockLimit> memlock_set;
  std::string memlock_reason;
  bool fits = true;
  std::vector<std::string> problems;  // why it does not fit, one sentence each
  std::vector<std::string> notes;     // decisions worth knowing, never a refusal

  const NumaDemand* FindNuma(int node) const;
};

// Places `plan` on `topology`. Errors (as opposed to a refused verdict) are
// inputs that cannot describe a step: fewer step GPUs than the plan uses, a
// GPU index the topology lacks, a GPU given twice, a plan rank naming a GPU
// outside the step, a safety factor that is not > 0, no allowed CPU.
Result<Placement> PlanPlacement(const LaunchPlan& plan, const Topology& topology, const PlacementRequest& request);

// What a caller does with a refused placement: strict refuses the step with
// the problems as the message; warn proceeds (the problems are logged).
enum class PlacementPolicy { kStrict, kWarn };
Result<PlacementPolicy> ParsePlacementPolicy(const std::string& text);  // "strict" | "warn"
const char* PlacementPolicyName(PlacementPolicy policy);
// Ok when it fits or the policy is warn; else an Error joining the problems.
Status EnforcePlacement(const Placement& placement, PlacementPolicy policy);

// `{"arm":..., "verdict":"fits"|"refused", "ranks":[{"rank","gpus","numa",
// "cpus"}], "numa":[{"node","needed_bytes","available_bytes",...}], ...}`
std::string PlacementToJson(const Placement& placement, bool pretty);
// A readable multi-line summary for people.
std::string PlacementSummary(const Placement& placement);

}  // namespace ix
