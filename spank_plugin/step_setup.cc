#include "spank_plugin/step_setup.h"

#include <rapidjson/document.h>

#include <algorithm>
#include <set>

#include "core/node/topology.h"

namespace ix {
namespace {

// A way the placement falls short: refuses the step under strict (the
// Error), is noted and accepted under warn (Ok).
Status Accept(StepSetup& setup, PlacementPolicy policy, const Error& shortfall) {
  if (policy == PlacementPolicy::kStrict) return shortfall;
  setup.placement_notes.push_back(shortfall.message);
  return Ok{};
}

// One engine process whose ranks span NUMA nodes places its workers itself
// when the recipe says how: setup.plan rendered again with the flags.
Status RenderWithWorkerPlaces(StepSetup& setup, const Recipe& recipe, const Placement& placement) {
  if (setup.plan.dp_layout != DpLayout::kEngine || !RanksSpanNumaNodes(placement) ||
      recipe.engine.numa_flags.empty()) {
    return Ok{};
  }
  setup.request.gpu_places = GpuPlacesFor(setup.plan, placement);
  Result<LaunchPlan> again = RenderPlan(recipe, setup.request);
  if (!again) return again.error();
  setup.plan = std::move(again).value();
  return Ok{};
}

}  // namespace

PlacementPolicy StepPlacementPolicy(const std::optional<std::string>& option) {
  return option == std::optional<std::string>("warn") ? PlacementPolicy::kWarn : PlacementPolicy::kStrict;
}

Result<std::string> PlaceStep(StepSetup& setup, const Recipe& recipe, const Topology& topology,
                              const Result<StepGpus>& gpus, PlacementRequest request,
                              const MemlockDecision& memlock, PlacementPolicy policy) {
  const std::string nothing_placed = "null";
  if (!gpus) {
    if (Status a = Accept(setup, policy, gpus.error()); !a) return a.error();
    return nothing_placed;
  }
  request.step_gpus = gpus.value().gpus;
  setup.node_gpus = gpus.value().gpus;
  Result<Placement> placed = PlanPlacement(setup.plan, topology, request);
  if (!placed) {
    if (Status a = Accept(setup, policy, placed.error()); !a) return a.error();
    return nothing_placed;
  }
  Placement& placement = placed.value();
  placement.memlock_set = memlock.raise_to;
  placement.memlock_reason = memlock.reason;
  if (Status e = EnforcePlacement(placement, policy); !e) return e.error();
  for (const std::string& p : placement.problems) setup.placement_notes.push_back(p);
  std::string json = PlacementToJson(placement, true);
  if (Status r = RenderWithWorkerPlaces(setup, recipe, placement); !r) return r.error();
  Result<std::vector<std::pair<std::string, BindingTarget>>> b = BindingsFor(setup.plan, placement);
  if (b) {
    setup.bindings = b.value();
  } else if (Status a = Accept(setup, policy, b.error()); !a) {
    return a.error();
  }
  return json;
}

bool RanksSpanNumaNodes(const Placement& placement) {
  std::set<int> nodes;
  for (const RankPlacement& r : placement.ranks) nodes.insert(r.numa);
  return nodes.size() > 1;
}

std::vector<GpuPlace> GpuPlacesFor(const LaunchPlan& plan, const Placement& placement) {
  std::vector<GpuPlace> places(static_cast<size_t>(plan.gpus));
  for (size_t i = 0; i < plan.ranks.size() && i < placement.ranks.size(); ++i) {
    for (int64_t g : plan.ranks[i].gpus) {
      if (g >= 0 && g < plan.gpus) places[static_cast<size_t>(g)] = {placement.ranks[i].numa, FormatIdList(placement.ranks[i].cpus)};
    }
  }
  return places;
}

namespace {

// The union of every rank's CPUs, and their NUMA node when they share one
// (`nodes`: the NUMA nodes of the step's GPUs).
BindingTarget AllRanks(const Placement& placement, std::set<int>& nodes) {
  BindingTarget t;
  for (const RankPlacement& r : placement.ranks) {
    nodes.insert(r.numa);
    t.cpus.insert(t.cpus.end(), r.cpus.begin(), r.cpus.end());
  }
  std::sort(t.cpus.begin(), t.cpus.end());
  t.cpus.erase(std::unique(t.cpus.begin(), t.cpus.end()), t.cpus.end());
  if (nodes.size() == 1) t.numa = *nodes.begin();
  return t;
}

}  // namespace

Result<std::vector<std::pair<std::string, BindingTarget>>> BindingsFor(const LaunchPlan& plan,
                                                                       const Placement& placement) {
  std::vector<std::pair<std::string, BindingTarget>> out;
  if (placement.ranks.empty()) return out;
  const BindingTarget rank0 = BindingTargetOf(placement.ranks[0]);
  std::set<int> nodes;
  const BindingTarget all = AllRanks(placement, nodes);
  const auto shared = [&](const PlannedProcess& p) {
    // A tier's server serves every rank; the router is rank 0's neighbour.
    return p.role == PlannedProcess::kServerRole ? all : rank0;
  };
  if (plan.dp_layout == DpLayout::kRankProcess) {
    for (const PlannedProcess& p : plan.processes) {
      const bool own = p.rank >= 0 && static_cast<size_t>(p.rank) < placement.ranks.size();
      out.emplace_back(p.name, own ? BindingTargetOf(placement.ranks[static_cast<size_t>(p.rank)]) : shared(p));
    }
    return out;
  }
  if (nodes.size() > 1 && !plan.worker_numa_flags) {
    std::vector<int> v(nodes.begin(), nodes.end());
    return Error{plan.arm + ": the ranks of the single engine process span NUMA nodes " +
                 FormatIdList(v) + " and the recipe declares no per-worker NUMA flags "
                 "(engine.numa_flags); give the step GPUs of one NUMA node, use an arm with "
                 "dp_layout: rank-process, or --inferencex-placement=warn"};
  }
  for (const PlannedProcess& p : plan.processes) {
    // Spanning nodes, the engine binds each worker's memory itself.
    out.emplace_back(p.name, p.name == "engine" ? all : shared(p));
  }
  return out;
}

std::vector<std::string> StepdArgv(const std::string& stepd_path, const StepSetup& s, int ready_fd,
                                   pid_t client_pid, int run_dir_fd, bool stop_with_client, int agent_fd) {
  // The run directory is a descriptor (it has no path inside a container);
  // --run-dir only names it in messages, and plan.json is read through it.
  std::vector<std::string> a = {stepd_path,
                                "--plan", "plan.json",
                                "--run-dir", s.run_dir,
                                "--run-dir-fd", std::to_string(run_dir_fd),
                                "--ready-timeout", std::to_string(s.ready_timeout_s),
                                "--ready-fd", std::to_string(ready_fd),
                                "--client-pid", std::to_string(client_pid)};
  if (!s.result_dir.empty()) a.insert(a.end(), {"--result-dir", s.result_dir});
  if (stop_with_client) a.push_back("--stop-with-client");
  if (!s.agent_socket.empty()) a.insert(a.end(), {"--agent-socket", s.agent_socket, "--step", s.step_id});
  if (agent_fd >= 0) a.insert(a.end(), {"--agent-fd", std::to_string(agent_fd)});
  if (!s.node_gpus.empty()) a.insert(a.end(), {"--gpus", FormatIdList(s.node_gpus)});
  for (const auto& [name, t] : s.bindings) {
    if (t.cpus.empty()) continue;
    std::string b = name + "=" + FormatIdList(t.cpus);
    if (t.numa) b += "@" + std::to_string(*t.numa);
    a.insert(a.end(), {"--bind", b});
  }
  return a;
}

EnvList TaskEnvironment(const StepSetup& s) {
  EnvList env;
  int public_port = 0;
  for (const auto& [k, v] : s.plan.ports) {
    if (k == "PORT") public_port = v;
  }
  if (public_port == 0 && !s.plan.ports.empty()) public_port = s.plan.ports[0].second;
  const bool v6 = s.plan.head_addr.find(':') != std::string::npos;
  const std::string host = s.plan.nodes <= 1 ? "localhost" : v6 ? "[" + s.plan.head_addr + "]" : s.plan.head_addr;
  env.emplace_back("IX_ENDPOINT", "http://" + host + ":" + std::to_string(public_port));
  env.emplace_back("IX_PORT", std::to_string(public_port));
  for (const auto& [k, v] : s.plan.ports) env.emplace_back("IX_PORT_" + k, std::to_string(v));
  env.emplace_back("IX_RUN_DIR", s.run_dir);
  env.emplace_back("IX_RESULT_DIR", s.result_dir.empty() ? s.run_dir + "/results" : s.result_dir);
  env.emplace_back("IX_RECIPE", s.plan.recipe);
  env.emplace_back("IX_ARM", s.plan.arm);
  env.emplace_back("IX_CONC", std::to_string(s.plan.conc));
  if (s.plan.nodes > 1) {
    env.emplace_back("IX_NODE_RANK", std::to_string(s.plan.node_rank));
    env.emplace_back("IX_NODES", std::to_string(s.plan.nodes));
    env.emplace_back("IX_HEAD_ADDR", s.plan.head_addr);
  }
  env.insert(env.end(), s.plan.client_env.begin(), s.plan.client_env.end());
  return env;
}

std::optional<std::string> FailureReason(const std::string& failure_json) {
  rapidjson::Document d;
  d.Parse(failure_json.data(), failure_json.size());
  if (d.HasParseError() || !d.IsObject()) return std::nullopt;
  // A const Document: FindMember and MemberEnd are both ConstMemberIterator
  // (comparing a const iterator with a non-const one is ambiguous in C++20).
  const rapidjson::Document& doc = d;
  const auto it = doc.FindMember("reason");
  if (it == doc.MemberEnd() || !it->value.IsString() || it->value.GetStringLength() == 0) return std::nullopt;
  std::string reason(it->value.GetString(), it->value.GetStringLength());
  if (reason.size() > 1000) reason = reason.substr(0, 1000) + "...";
  for (char& c : reason) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';  // one line in the log
  }
  return reason;
}

}  // namespace ix
