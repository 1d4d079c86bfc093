// LaunchPlan: everything one job step will run, rendered from a recipe for
// one arm and concurrency. It is data only: exact argv vectors, the
// environment each process adds to the task's, the ports by name, the ranks
// and their step-local GPU indices, readiness checks, host-memory totals and
// the client environment. No field is ever interpreted by a shell.
// Invariants: every port named by the arm has a number; ports are distinct;
// ranks.size() == dp and each rank holds tp GPUs, disjoint, covering
// [0, gpus).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/recipe.h"
#include "core/result.h"

namespace ix {

using EnvList = std::vector<std::pair<std::string, std::string>>;
using PortList = std::vector<std::pair<std::string, int>>;

struct ReadinessCheck {
  ReadinessTemplate::Kind kind;
  std::string url;
};
const char* ReadinessKindName(ReadinessTemplate::Kind kind);

struct PlannedProcess {
  std::string name;
  std::string log;
  std::vector<std::string> argv;
  EnvList env;
  std::vector<ReadinessCheck> readiness;
};

struct PlannedRank {
  int64_t rank = 0;
  std::vector<int64_t> gpus;  // step-local indices into CUDA_VISIBLE_DEVICES
};

struct PlannedHostMemory {
  std::string name;
  HostMemoryNeed::Per per;
  uint64_t bytes_each = 0;
  int64_t count = 0;
  uint64_t total_bytes = 0;
};

struct LaunchPlan {
  std::string recipe;
  std::string arm;
  int64_t conc = 0;
  bool eval_only = false;
  int64_t gpus = 0, tp = 0, ep = 0, dp = 0;
  std::vector<PlannedRank> ranks;
  PortList ports;
  std::vector<PlannedProcess> processes;
  EnvList client_env;
  std::vector<PlannedHostMemory> host_memory;
  EnvList variables;  // every variable as rendered, for the record
};

// What to render. `ports` must give a number for each port of the arm
// (PortNames); `overrides` replace recipe variables by name.
struct RenderRequest {
  std::string arm;
  int64_t conc = 0;
  bool eval_only = false;
  EnvList overrides;
  PortList ports;
};

// The port names the arm needs, in order.
Result<std::vector<std::string>> PortNames(const Recipe& recipe, const std::string& arm);
// Distinct stand-in numbers for a plan that is not running (from 20000 up).
PortList PlaceholderPorts(const std::vector<std::string>& names);

Result<LaunchPlan> RenderPlan(const Recipe& recipe, const RenderRequest& request);
// RenderPlan for a plan that is not running: the arm's ports get
// PlaceholderPorts (request.ports is ignored).
Result<LaunchPlan> RenderDryRun(const Recipe& recipe, RenderRequest request);

// Smallest power of two >= n, capped at `cap` (n >= 1).
int64_t CaptureSize(int64_t n, int64_t cap);

// `{"recipe":...,"processes":[{"name","argv","env",...}],"ports":{...},...}`
std::string PlanToJson(const LaunchPlan& plan, bool pretty);
// A readable multi-line summary for people.
std::string PlanSummary(const LaunchPlan& plan);

}  // namespace ix
