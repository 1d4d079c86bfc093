// LaunchPlan: everything one job step will run, rendered from a recipe for
// one arm and concurrency. It is data only: exact argv vectors, the
// environment each process adds to the task's, the ports by name, the ranks
// and their step-local GPU indices, readiness checks, host-memory totals and
// the client environment. No field is ever interpreted by a shell.
// Invariants: every port named by the arm (its ports, rank ports and step
// ports) has a number; ports are distinct; ranks are this node's: with
// pp == 1, DP_LOCAL ranks (dp on one node) numbered from DP_START_RANK,
// each holding tp GPUs, disjoint, covering [0, gpus); with pp > 1 the one
// rank 0 holding all gpus; in the rank-process layout (one node only) there
// is one engine process per rank (named engine-rank<r>, rank == r) and
// every other process has rank -1. A plan for a node after the head
// (node_rank > 0) has no router, and its engine's one readiness check is
// kConnected to head_addr.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/recipe/recipe.h"
#include "core/base/result.h"

namespace ix {

using EnvList = std::vector<std::pair<std::string, std::string>>;
using PortList = std::vector<std::pair<std::string, int>>;

// A readiness check with its URL rendered.
struct ReadinessCheck {
  ReadinessTemplate::Kind kind;
  std::string url;
};
const char* ReadinessKindName(ReadinessTemplate::Kind kind);

// One process of the step: exact argv, the environment it adds, its log
// file and when it is ready. `role` is "" for the engine(s) and the router
// and kServerRole for a KV offload tier's server: such processes come
// first in LaunchPlan::processes, are started (and ready) before the
// engine and stopped after it.
struct PlannedProcess {
  static constexpr const char* kServerRole = "server";
  std::string name;
  std::string role;
  std::string log;
  int64_t rank = -1;  // the DP rank it alone serves (rank-process engines), else -1
  std::vector<std::string> argv;
  EnvList env;
  std::vector<ReadinessCheck> readiness;
};

// One data-parallel rank: its GPUs and its own ports.
struct PlannedRank {
  int64_t rank = 0;
  std::vector<int64_t> gpus;  // step-local indices into CUDA_VISIBLE_DEVICES
  PortList ports;             // the arm's rank ports, this rank's numbers
};

// A host-memory need multiplied out for this arm: bytes_each x count.
struct PlannedHostMemory {
  std::string name;
  HostMemoryNeed::Per per;
  uint64_t bytes_each = 0;
  int64_t count = 0;
  uint64_t total_bytes = 0;
  // Registered with CUDA or the NIC (RLIMIT_MEMLOCK must cover it). Not in
  // the JSON: the plugin decides the limit from the plan it rendered.
  bool pinned = false;
};

// A file written into the step's run directory before any process starts.
// Invariant: name is a plain file name (no '/', not "." or "..").
struct PlannedFile {
  std::string name;
  std::string text;
};

// One server the hang policy watches: `process` names a process of the plan
// (an engine, engine-rank<r>, or the router), read at `metrics_url` (ports
// rendered). While any `busy` gauge is above zero some `progress` counter
// must move within PlannedHang::after_s; an empty `progress` (the router's
// only) means the engine checks' progress counters are what must move.
// With `per_label` set each value of that label (vLLM's `engine`: one DP
// rank) is judged alone; "" judges the server's samples summed.
struct HangCheck {
  std::string process;
  std::string metrics_url;
  std::vector<std::string> busy;
  std::vector<std::string> progress;
  std::string per_label;
};

// The step's hang policy (docs/STEP.md): a server busy without progress, or
// not answering its metrics while its process lives, for after_s seconds is
// hung. Invariants: after_s > 0; each check names a process of the plan.
// `checks` may be empty on a node with nothing to watch (a node after the
// head serves no API: the head's engine check covers its ranks).
struct PlannedHang {
  double after_s = 0;
  std::vector<HangCheck> checks;
};

// The whole plan; its invariants are at the top of this file.
struct LaunchPlan {
  std::string recipe;
  std::string arm;
  int64_t conc = 0;
  bool eval_only = false;
  int64_t gpus = 0, tp = 0, ep = 0, dp = 0;  // gpus: of this node
  int64_t pp = 1;
  // Across nodes: this node's rank in the step (0: the head, which runs the
  // router and serves the API), the step's node count, the head's address
  // as Slurm knows it, and which of `ports` are the step's (the same on
  // every node, from Slurm's reserved ports).
  int64_t nodes = 1, node_rank = 0;
  std::string head_addr;
  std::vector<std::string> step_ports;
  DpLayout dp_layout = DpLayout::kEngine;
  // The engine got the recipe's numa_flags: it places its own workers, so
  // the process as a whole is bound to the union of its ranks' CPUs only.
  bool worker_numa_flags = false;
  std::vector<PlannedRank> ranks;
  PortList ports;  // every leased port, rank ports as NAME_RANK<r>
  // The KV offload tier ("" = none), the files it writes into the run
  // directory; its servers are the processes with role kServerRole.
  std::string kv_offload;
  std::vector<PlannedFile> files;
  std::vector<PlannedProcess> processes;
  // Absent when the recipe has no `hang:` section or the request turned it off.
  std::optional<PlannedHang> hang;
  EnvList client_env;
  std::vector<PlannedHostMemory> host_memory;
  EnvList variables;  // every variable as rendered, for the record
};

// Where one GPU of the step was placed, for the per_gpu items of
// engine.numa_flags.
struct GpuPlace {
  int numa = -1;
  std::string cpus;  // list syntax, "0-15,64-79"
};

// What to render. `ports` must give a number for each port of the arm
// (PortNames); `overrides` replace recipe variables by name. `gpu_places`
// (step-local GPU order), when given for an engine-layout arm whose recipe
// declares engine.numa_flags, appends those flags to the engine.
struct RenderRequest {
  std::string arm;
  int64_t conc = 0;
  bool eval_only = false;
  EnvList overrides;
  PortList ports;
  std::vector<GpuPlace> gpu_places;
  // Multi-node arms: which node this plan is for and the head's address;
  // `ports` must then also number the arm's step ports (StepPortNames).
  int64_t node_rank = 0;
  std::string head_addr;
  // The KV offload tier ("" or "none": none), one the recipe serves; its
  // ports must be in `ports` too (PortNames with the tier). The host DRAM
  // budget in GB (InferenceX's TOTAL_CPU_DRAM_GB), required (> 0) when the
  // tier's templates use it; the step's result directory as its processes
  // see it (the servers' working directory, mounted at the same path in a
  // container), where ix-stepd writes the tier's files, required when they
  // use RESULT_DIR (RenderDryRun: "RESULT_DIR").
  std::string kv_offload;
  int64_t total_cpu_dram_gb = 0;
  std::string result_dir;
  // Seconds without progress after which the step is hung: unset, the
  // recipe's `hang.after`; 0, off (the plan has no `hang`); otherwise
  // 0 < s <= HangPolicy::kMaxHangAfterS, and the recipe must have `hang:`.
  std::optional<double> hang_after_s;
};

// The port names the arm needs, in order: its ports, then each rank port
// once per rank as NAME_RANK<r>, then the ports of the KV offload tier's
// servers ("" or "none": no tier; a tier the recipe does not serve is an
// error naming those it does).
Result<std::vector<std::string>> PortNames(const Recipe& recipe, const std::string& arm,
                                           const std::string& kv_offload = "");
// The arm's step ports (the same number on every node of the step), in order.
Result<std::vector<std::string>> StepPortNames(const Recipe& recipe, const std::string& arm);
// Distinct stand-in numbers for a plan that is not running (from 20000 up).
PortList PlaceholderPorts(const std::vector<std::string>& names);

Result<LaunchPlan> RenderPlan(const Recipe& recipe, const RenderRequest& request);
// RenderPlan for a plan that is not running: the arm's ports get
// PlaceholderPorts (request.ports is ignored); an empty result_dir is "RESULT_DIR".
Result<LaunchPlan> RenderDryRun(const Recipe& recipe, RenderRequest request);

// Smallest power of two >= n, capped at `cap` (n >= 1).
int64_t CaptureSize(int64_t n, int64_t cap);

// `{"recipe":...,"processes":[{"name","argv","env",...}],"ports":{...},...}`
std::string PlanToJson(const LaunchPlan& plan, bool pretty);
// The inverse of PlanToJson (ix-stepd reads the plan the plugin wrote);
// `where` names the text in errors.
Result<LaunchPlan> PlanFromJson(const std::string& text, const std::string& where);
// A readable multi-line summary for people.
std::string PlanSummary(const LaunchPlan& plan);

}  // namespace ix
