#include "core/recipe/launch_plan.h"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include "core/recipe/launch_plan_hang.h"
#include "core/recipe/launch_plan_kv_offload.h"
#include "core/yaml/yaml_reader.h"

namespace ix {
namespace {

// Adds `extra` to `base`: a name already there gets the new value in place,
// a new name is appended, so the written order is kept.
void MergeEnv(EnvList& base, const EnvList& extra) {
  for (const auto& [k, v] : extra) {
    const std::string& name = k;  // clang 14 (the fuzz build) cannot capture a structured binding
    auto it = std::find_if(base.begin(), base.end(), [&](const auto& e) { return e.first == name; });
    if (it != base.end()) {
      it->second = v;
    } else {
      base.emplace_back(k, v);
    }
  }
}

// The values every template of one arm renders against.
class Scope {
 public:
  explicit Scope(const Arm& arm) : arm_(arm) {}

  void Set(const std::string& name, std::string value) {
    if (!values_.count(name)) order_.push_back(name);
    values_[name] = std::move(value);
  }

  // The arm's rank ports: numbers per rank, rank 0's set as the plain name.
  void SetRankPorts(std::vector<std::pair<std::string, std::vector<int>>> ports) {
    rank_ports_ = std::move(ports);
    for (const auto& [name, per_rank] : rank_ports_) Set(name, std::to_string(per_rank.at(0)));
  }

  // The scope of one rank: DP_RANK and the rank ports are that rank's. Arm
  // variables rendered so far are dropped, since they may use a rank port.
  Scope ForRank(int64_t r) const {
    Scope s(arm_);
    s.values_ = values_;
    s.order_ = order_;
    s.rank_ports_ = rank_ports_;
    for (const auto& [name, per_rank] : rank_ports_) s.values_[name] = std::to_string(per_rank.at(r));
    s.Set("DP_RANK", std::to_string(r));
    return s;
  }

  // Arm variables render lazily against the scope; cycles were rejected at
  // load time, so the recursion ends.
  std::optional<std::string> Get(const std::string& name) {
    if (auto it = values_.find(name); it != values_.end()) return it->second;
    if (auto it = cache_.find(name); it != cache_.end()) return it->second;
    for (const auto& [v, t] : arm_.vars) {
      if (v != name) continue;
      Result<std::string> r = t.tmpl.Render([this](const std::string& n) { return Get(n); });
      if (!r) return std::nullopt;
      cache_[name] = r.value();
      cache_order_.push_back(name);
      return r.value();
    }
    return std::nullopt;
  }

  Result<std::string> Render(const LocatedTemplate& t) {
    Result<std::string> r = t.tmpl.Render([this](const std::string& n) { return Get(n); });
    if (!r) return Error{t.ref.Describe() + ": " + r.error().message};
    return r;
  }

  Result<EnvList> RenderEnv(const std::vector<EnvTemplate>& env) {
    EnvList out;
    for (const auto& e : env) {
      Result<std::string> v = Render(e.value);
      if (!v) return v.error();
      out.emplace_back(e.name, v.value());
    }
    return out;
  }

  // Every value set or rendered, in order, but those named in `unrecorded`.
  EnvList All(const std::set<std::string>& unrecorded) const {
    EnvList out;
    for (const auto& n : order_) {
      if (!unrecorded.count(n)) out.emplace_back(n, values_.at(n));
    }
    for (const auto& n : cache_order_) out.emplace_back(n, cache_.at(n));
    return out;
  }

  int64_t dp() const { return arm_.dp; }

 private:
  const Arm& arm_;
  std::map<std::string, std::string> values_;
  std::vector<std::string> order_;
  std::map<std::string, std::string> cache_;  // arm variables rendered so far
  std::vector<std::string> cache_order_;
  std::vector<std::pair<std::string, std::vector<int>>> rank_ports_;
};

// Renders a list whose items may repeat per rank or per GPU into `out`.
Status RenderList(const std::vector<ListArg>& list, Scope& scope, const std::vector<GpuPlace>& gpus,
                  std::vector<std::string>& out) {
  auto add = [&](Scope& s, const LocatedTemplate& t) -> Status {
    Result<std::string> r = s.Render(t);
    if (!r) return r.error();
    out.push_back(std::move(r).value());
    return Ok{};
  };
  for (const ListArg& a : list) {
    switch (a.kind) {
      case ListArg::Kind::kText:
        if (Status s = add(scope, a.text); !s) return s;
        break;
      case ListArg::Kind::kPerRank:
        for (int64_t r = 0; r < scope.dp(); ++r) {
          Scope rs = scope.ForRank(r);
          if (Status s = add(rs, a.text); !s) return s;
        }
        break;
      case ListArg::Kind::kPerGpu:
        for (const GpuPlace& g : gpus) {
          Scope gs = scope;
          gs.Set("GPU_NUMA", std::to_string(g.numa));
          gs.Set("GPU_CPUS", g.cpus);
          if (Status s = add(gs, a.text); !s) return s;
        }
        break;
    }
  }
  return Ok{};
}

// "server.log" for rank 2 -> "server-rank2.log".
std::string RankLog(const std::string& log, int64_t rank) {
  const size_t dot = log.rfind('.');
  const std::string tag = "-rank" + std::to_string(rank);
  return dot == std::string::npos || dot == 0 ? log + tag : log.substr(0, dot) + tag + log.substr(dot);
}

using Fragments = std::vector<std::pair<std::string, std::vector<ListArg>>>;

// `p` rendered against `scope`, splicing `fragments` (the arm's, or on a
// node after the head the arm's with its others_fragments in their place).
Result<PlannedProcess> RenderProcess(const ProcessTemplate& p, const Fragments& fragments, Scope& scope,
                                     const std::vector<EnvTemplate>& extra_env) {
  PlannedProcess out;
  out.name = p.name;
  out.log = p.log;
  auto add = [&](const LocatedTemplate& t) -> Status {
    Result<std::string> s = scope.Render(t);
    if (!s) return s.error();
    out.argv.push_back(std::move(s).value());
    return Ok{};
  };
  for (const ArgTemplate& a : p.argv) {
    switch (a.kind) {
      case ArgTemplate::Kind::kText:
        if (Status s = add(a.text); !s) return s.error();
        break;
      case ArgTemplate::Kind::kSplice:
        for (const auto& [name, fragment] : fragments) {
          if (name != a.fragment) continue;
          if (Status s = RenderList(fragment, scope, {}, out.argv); !s) return s.error();
        }
        break;
      case ArgTemplate::Kind::kWhen: {
        std::optional<std::string> cond = scope.Get(a.when);
        if (cond && !cond->empty()) {
          for (const auto& t : a.args) {
            if (Status s = add(t); !s) return s.error();
          }
        }
        break;
      }
    }
  }
  Result<EnvList> env = scope.RenderEnv(p.env);
  if (!env) return env.error();
  Result<EnvList> extra = scope.RenderEnv(extra_env);
  if (!extra) return extra.error();
  out.env = std::move(env).value();
  MergeEnv(out.env, extra.value());
  for (const auto& r : p.readiness) {
    Result<std::string> url = scope.Render(r.url);
    if (!url) return url.error();
    out.readiness.push_back(ReadinessCheck{r.kind, url.value()});
  }
  return out;
}

}  // namespace

int64_t CaptureSize(int64_t n, int64_t cap) {
  int64_t p = 1;
  while (p < n && p < cap) p *= 2;
  return std::min(p, cap);
}

namespace {

// The arm of `recipe` named `name`, or an error listing the arms.
Result<const Arm*> FindArm(const Recipe& recipe, const std::string& name) {
  const Arm* a = recipe.FindArm(name);
  if (!a) return Error{"unknown arm '" + name + "' for recipe " + recipe.name + "; allowed: " + JoinNames(recipe.ArmNames())};
  return a;
}

// The shape of one node's part of an arm: how many of the DP ranks it runs
// and the first of them. With pipeline stages across nodes (dp == 1) every
// node runs part of the one rank.
struct NodeShape {
  int64_t dp_local = 0, dp_start_rank = 0;
};
NodeShape ShapeOf(const Arm& arm, int64_t node_rank) {
  const int64_t local = arm.pp == 1 ? arm.dp / arm.nodes : arm.dp;
  return NodeShape{local, node_rank * local};
}

// The builtins that describe the node; a plan of the single-node shape
// (one node, no pipeline stages) does not record them, so its JSON is what
// it was before arms could span nodes.
const std::set<std::string>& NodeBuiltins() {
  static const std::set<std::string> kNames = {"PP", "NODES", "NODE_RANK", "HEAD_ADDR", "DP_LOCAL", "DP_START_RANK"};
  return kNames;
}

// RenderPlan's steps, in order: the scope (builtins, recipe variables, the
// CUDA-graph capture size, ports), then the plan's ranks, processes, client
// environment and host memory. Invariant: a step runs only after the ones
// before it succeeded, so the scope holds every value a template may use.
class PlanRenderer {
 public:
  PlanRenderer(const Recipe& recipe, const Arm& arm, const RenderRequest& req)
      : recipe_(recipe), arm_(arm), req_(req), what_(recipe.name + " arm " + arm.name), scope_(arm),
        shape_(ShapeOf(arm, req.node_rank)), plan_(PlanOfArm(recipe, arm, req)) {}

  Result<LaunchPlan> Render() {
    SetBuiltins();
    if (Status s = SetVariables(); !s) return s.error();
    if (Status s = SetCaptureSize(); !s) return s.error();
    if (Status s = SetKvOffloadBuiltins(); !s) return s.error();
    if (Status s = SetPorts(); !s) return s.error();
    SetRanks();
    AddHostMemory();  // before the tier's, which follow the recipe's
    if (Status s = AddEngines(); !s) return s.error();
    const Lookup lookup = [this](const std::string& n) { return scope_.Get(n); };
    if (tier_) {  // while the engines are the only processes
      if (Status s = ApplyKvOffload(*tier_, lookup, what_, plan_); !s) return s.error();
    }
    if (arm_.router && req_.node_rank == 0) {  // the router runs on the head only
      Result<PlannedProcess> router = RenderProcess(*recipe_.router, arm_.fragments, scope_, {});
      if (!router) return router.error();
      plan_.processes.push_back(std::move(router).value());
    }
    if (Status s = ApplyHang(recipe_, req_, lookup, what_, plan_); !s) return s.error();
    Result<EnvList> client = scope_.RenderEnv(recipe_.client_env);
    if (!client) return client.error();
    Result<EnvList> client_extra = scope_.RenderEnv(arm_.client_env);
    if (!client_extra) return client_extra.error();
    plan_.client_env = std::move(client).value();
    MergeEnv(plan_.client_env, client_extra.value());
    for (const auto& [v, t] : arm_.vars) scope_.Get(v);  // record them all
    plan_.variables = scope_.All(arm_.nodes == 1 && arm_.pp == 1 ? NodeBuiltins() : std::set<std::string>{});
    return std::move(plan_);
  }

 private:
  void SetBuiltins() {
    scope_.Set("RECIPE", recipe_.name);
    scope_.Set("ARM", arm_.name);
    scope_.Set("CONC", std::to_string(req_.conc));
    scope_.Set("EVAL_ONLY", req_.eval_only ? "1" : "0");
    scope_.Set("GPUS", std::to_string(arm_.gpus));
    scope_.Set("TP", std::to_string(arm_.tp));
    scope_.Set("EP", std::to_string(arm_.ep));
    scope_.Set("DP", std::to_string(arm_.dp));
    scope_.Set("PP", std::to_string(arm_.pp));
    scope_.Set("NODES", std::to_string(arm_.nodes));
    scope_.Set("NODE_RANK", std::to_string(req_.node_rank));
    scope_.Set("HEAD_ADDR", arm_.nodes == 1 ? "127.0.0.1" : req_.head_addr);
    scope_.Set("DP_LOCAL", std::to_string(shape_.dp_local));
    scope_.Set("DP_START_RANK", std::to_string(shape_.dp_start_rank));
  }

  // Recipe variables: the eval-only value when asked for, an override (each
  // naming a variable, once) over either.
  Status SetVariables() {
    std::set<std::string> overridden;
    for (const auto& [name, value] : req_.overrides) {
      if (!recipe_.FindVariable(name)) {
        std::vector<std::string> settable;
        for (const auto& v : recipe_.variables) settable.push_back(v.name);
        return Error{"cannot set '" + name + "': not a variable of recipe " + recipe_.name +
                     "; settable: " + (settable.empty() ? "(none)" : JoinNames(settable))};
      }
      if (!overridden.insert(name).second) return Error{"variable '" + name + "' is set twice"};
    }
    for (const RecipeVariable& v : recipe_.variables) {
      std::string value = req_.eval_only && v.eval_only_value ? *v.eval_only_value : v.value;
      for (const auto& [name, o] : req_.overrides) {
        if (name == v.name) value = o;
      }
      scope_.Set(v.name, value);
    }
    return Ok{};
  }

  // Over the whole step's DP size: the client's requests spread over every
  // rank of every node.
  Status SetCaptureSize() {
    if (!recipe_.capture) return Ok{};
    const int64_t mult = arm_.capture_batch_multiplier;
    const int64_t batch = req_.conc * mult;
    if (batch % arm_.dp != 0) {
      return Error{what_ + ": the per-rank CUDA-graph batch " + std::to_string(mult) + " x CONC / " +
                   std::to_string(arm_.dp) + " is not whole for CONC=" + std::to_string(req_.conc) + " (" +
                   std::to_string(mult) + " x CONC must be divisible by " + std::to_string(arm_.dp) +
                   ", the data-parallel size)"};
    }
    scope_.Set(recipe_.capture->variable,
               std::to_string(CaptureSize(batch / arm_.dp * recipe_.capture->tokens_per_request, recipe_.capture->max)));
    return Ok{};
  }

  // The KV offload tier asked for (none: nothing to do) and its builtins.
  Status SetKvOffloadBuiltins() {
    Result<const KvOffloadTier*> tier = SelectKvOffload(recipe_, req_.kv_offload);
    if (!tier) return tier.error();
    tier_ = tier.value();
    if (!tier_) return Ok{};
    Result<std::vector<std::pair<std::string, std::string>>> values = KvOffloadBuiltinValues(*tier_, arm_, req_);
    if (!values) return values.error();
    for (auto& [name, value] : values.value()) scope_.Set(name, std::move(value));
    return Ok{};
  }

  // Every port the arm needs from the request (its local ports, then its
  // step ports), each number once; the arm's ports into the scope, its rank
  // ports per rank (rank_ports_).
  Status SetPorts() {
    std::set<int> numbers;
    Result<std::vector<std::string>> port_names = PortNames(recipe_, arm_.name, req_.kv_offload);
    if (!port_names) return port_names.error();
    std::vector<std::string> names = std::move(port_names).value();
    names.insert(names.end(), arm_.step_ports.begin(), arm_.step_ports.end());
    for (const std::string& name : names) {
      auto it = std::find_if(req_.ports.begin(), req_.ports.end(), [&](const auto& p) { return p.first == name; });
      if (it == req_.ports.end()) return Error{what_ + ": no port number given for " + name};
      if (it->second <= 0 || it->second > 65535) {
        return Error{what_ + ": port " + name + "=" + std::to_string(it->second) + " is outside 1-65535"};
      }
      if (!numbers.insert(it->second).second) {
        return Error{what_ + ": port " + std::to_string(it->second) + " given to two names"};
      }
      const auto in = [&name](const std::vector<std::string>& list) {
        return std::find(list.begin(), list.end(), name) != list.end();
      };
      if (in(arm_.ports) || in(arm_.step_ports) || (tier_ && in(tier_->Ports()))) {
        scope_.Set(name, std::to_string(it->second));
      }
      plan_.ports.emplace_back(name, it->second);
    }
    auto port_of = [&](const std::string& name) {
      for (const auto& [k, v] : plan_.ports) {
        if (k == name) return v;
      }
      return 0;
    };
    for (const std::string& p : arm_.rank_ports) {
      std::vector<int> per_rank;
      for (int64_t r = 0; r < arm_.dp; ++r) per_rank.push_back(port_of(p + "_RANK" + std::to_string(r)));
      rank_ports_.emplace_back(p, per_rank);
    }
    if (!rank_ports_.empty()) scope_.SetRankPorts(rank_ports_);
    return Ok{};
  }

  // What the plan says of the arm before anything is rendered.
  static LaunchPlan PlanOfArm(const Recipe& recipe, const Arm& arm, const RenderRequest& req) {
    return LaunchPlan{.recipe = recipe.name, .arm = arm.name, .conc = req.conc, .eval_only = req.eval_only,
                      .gpus = arm.gpus, .tp = arm.tp, .ep = arm.ep, .dp = arm.dp, .pp = arm.pp, .nodes = arm.nodes,
                      .node_rank = req.node_rank, .head_addr = arm.nodes == 1 ? "" : req.head_addr,
                      .step_ports = arm.step_ports, .dp_layout = arm.dp_layout};
  }

  // This node's ranks: with pp == 1 the node's DP_LOCAL ranks from
  // DP_START_RANK, local rank i on GPUs [i*tp, (i+1)*tp) with its rank
  // ports; with pipeline stages the one rank 0 on all of the node's GPUs.
  void SetRanks() {
    if (arm_.pp > 1) {
      PlannedRank rank{0, {}, {}};
      for (int64_t g = 0; g < arm_.gpus; ++g) rank.gpus.push_back(g);
      plan_.ranks.push_back(std::move(rank));
      return;
    }
    for (int64_t i = 0; i < shape_.dp_local; ++i) {
      const int64_t r = shape_.dp_start_rank + i;
      PlannedRank rank{r, {}, {}};
      for (int64_t g = 0; g < arm_.tp; ++g) rank.gpus.push_back(i * arm_.tp + g);
      for (const auto& [name, per_rank] : rank_ports_) rank.ports.emplace_back(name, per_rank[r]);
      plan_.ranks.push_back(std::move(rank));
    }
  }

  // The fragments this node's engine splices: the arm's, with, on a node
  // after the head, its others_fragments in place of those of that name.
  Fragments EngineFragments() const {
    Fragments out = arm_.fragments;
    if (req_.node_rank == 0) return out;
    for (auto& [name, list] : out) {
      for (const auto& [other, other_list] : arm_.others_fragments) {
        if (other == name) list = other_list;
      }
    }
    return out;
  }

  // One engine per rank (rank-process layout), or one engine that, given
  // the GPUs' places and engine.numa_flags, places its own workers. On a
  // node after the head the engine serves no API: it is ready once it holds
  // a connection to the head.
  Status AddEngines() {
    if (arm_.dp_layout == DpLayout::kRankProcess) return AddRankEngines();
    Result<PlannedProcess> engine = RenderProcess(recipe_.engine, EngineFragments(), scope_, arm_.engine_env);
    if (!engine) return engine.error();
    if (req_.node_rank > 0) {
      engine.value().readiness = {ReadinessCheck{ReadinessTemplate::Kind::kConnected, req_.head_addr}};
    }
    if (!req_.gpu_places.empty() && !recipe_.engine.numa_flags.empty()) {
      if (static_cast<int64_t>(req_.gpu_places.size()) < arm_.gpus) {
        return Error{what_ + ": " + std::to_string(req_.gpu_places.size()) + " GPU places given for " +
                     std::to_string(arm_.gpus) + " GPUs"};
      }
      const std::vector<GpuPlace> places(req_.gpu_places.begin(), req_.gpu_places.begin() + arm_.gpus);
      if (Status s = RenderList(recipe_.engine.numa_flags, scope_, places, engine.value().argv); !s) return s;
      plan_.worker_numa_flags = true;
    }
    plan_.processes.push_back(std::move(engine).value());
    return Ok{};
  }

  Status AddRankEngines() {
    for (int64_t r = 0; r < arm_.dp; ++r) {
      Scope rs = scope_.ForRank(r);
      Result<PlannedProcess> engine = RenderProcess(recipe_.engine, arm_.fragments, rs, arm_.engine_env);
      if (!engine) return engine.error();
      engine.value().name = recipe_.engine.name + "-rank" + std::to_string(r);
      engine.value().log = RankLog(recipe_.engine.log, r);
      engine.value().rank = r;
      plan_.processes.push_back(std::move(engine).value());
    }
    return Ok{};
  }

  // Counted on this node: its ranks, its GPUs, once.
  void AddHostMemory() {
    for (const HostMemoryNeed& need : recipe_.host_memory) {
      const int64_t count = need.per == HostMemoryNeed::Per::kDpRank ? static_cast<int64_t>(plan_.ranks.size())
                            : need.per == HostMemoryNeed::Per::kGpu  ? arm_.gpus
                                                                     : 1;
      plan_.host_memory.push_back(PlannedHostMemory{need.name, need.per, need.bytes, count,
                                                    need.bytes * static_cast<uint64_t>(count), need.pinned});
    }
  }

  const Recipe& recipe_;
  const Arm& arm_;
  const RenderRequest& req_;
  const std::string what_;  // "RECIPE arm ARM", for messages
  Scope scope_;
  const NodeShape shape_;
  LaunchPlan plan_;
  std::vector<std::pair<std::string, std::vector<int>>> rank_ports_;
  const KvOffloadTier* tier_ = nullptr;  // the tier asked for, if any
};

}  // namespace

Result<std::vector<std::string>> PortNames(const Recipe& recipe, const std::string& arm, const std::string& kv_offload) {
  Result<const Arm*> a = FindArm(recipe, arm);
  if (!a) return a.error();
  Result<const KvOffloadTier*> tier = SelectKvOffload(recipe, kv_offload);
  if (!tier) return tier.error();
  std::vector<std::string> names = a.value()->ports;
  for (const auto& p : a.value()->rank_ports) {
    for (int64_t r = 0; r < a.value()->dp; ++r) names.push_back(p + "_RANK" + std::to_string(r));
  }
  if (tier.value()) {
    for (const std::string& p : tier.value()->Ports()) names.push_back(p);
  }
  return names;
}

Result<std::vector<std::string>> StepPortNames(const Recipe& recipe, const std::string& arm) {
  Result<const Arm*> a = FindArm(recipe, arm);
  if (!a) return a.error();
  return a.value()->step_ports;
}

PortList PlaceholderPorts(const std::vector<std::string>& names) {
  PortList ports;
  int next = 20000;
  for (const auto& n : names) ports.emplace_back(n, next++);
  return ports;
}

Result<LaunchPlan> RenderPlan(const Recipe& recipe, const RenderRequest& req) {
  Result<const Arm*> found = FindArm(recipe, req.arm);
  if (!found) return found.error();
  const Arm& arm = *found.value();
  if (req.conc <= 0) return Error{"concurrency must be a positive integer, got " + std::to_string(req.conc)};
  if (req.node_rank < 0 || req.node_rank >= arm.nodes) {
    return Error{recipe.name + " arm " + arm.name + ": node rank " + std::to_string(req.node_rank) +
                 " is outside 0.." + std::to_string(arm.nodes - 1) + " (the arm runs on " +
                 std::to_string(arm.nodes) + (arm.nodes == 1 ? " node)" : " nodes)")};
  }
  if (arm.nodes > 1 && req.head_addr.empty()) {
    return Error{recipe.name + " arm " + arm.name + ": runs across " + std::to_string(arm.nodes) +
                 " nodes and needs the head's address"};
  }
  return PlanRenderer(recipe, arm, req).Render();
}

Result<LaunchPlan> RenderDryRun(const Recipe& recipe, RenderRequest request) {
  Result<std::vector<std::string>> names = PortNames(recipe, request.arm, request.kv_offload);
  if (!names) return names.error();
  Result<std::vector<std::string>> step = StepPortNames(recipe, request.arm);
  if (!step) return step.error();
  names.value().insert(names.value().end(), step.value().begin(), step.value().end());
  request.ports = PlaceholderPorts(names.value());
  if (request.head_addr.empty()) request.head_addr = "HEAD_ADDR";
  if (request.result_dir.empty()) request.result_dir = "RESULT_DIR";
  return RenderPlan(recipe, request);
}

}  // namespace ix
