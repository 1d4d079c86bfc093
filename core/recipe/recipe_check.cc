#include "core/recipe/recipe_check.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/yaml/yaml_reader.h"

namespace ix {
namespace {

// Where a template is rendered: DP_RANK has a value only per rank, the
// per-GPU names only per GPU.
struct Context {
  bool rank = false;
  bool gpu = false;
};

// One arm's check. Invariant: scope_ holds every name the arm may use, with
// what declared it, before any template is checked.
class ArmChecker {
 public:
  ArmChecker(const Recipe& recipe, const Arm& arm)
      : recipe_(recipe), arm_(arm), field_("arms." + arm.name) {}

  void Run() {
    DeclareNames();
    const Context engine{arm_.dp_layout == DpLayout::kRankProcess, false};
    CheckProcess(recipe_.engine, engine);
    if (arm_.router) {
      if (!recipe_.router) {
        throw YamlError(arm_.where + ": field '" + field_ + ".router': the arm uses a router but the "
                        "recipe has no 'router' section");
      }
      CheckProcess(*recipe_.router, Context{});
    }
    for (const auto& [n, f] : arm_.fragments) {
      if (!spliced_.count(n)) {
        throw YamlError(arm_.where + ": field '" + field_ + ".fragments." + n +
                        "': fragment is never spliced into a command");
      }
    }
    // The fragments the nodes after the head splice into their engine.
    for (const auto& [n, f] : arm_.others_fragments) CheckList(f, engine);
    CheckEnv(arm_.engine_env, engine);
    CheckEnv(recipe_.client_env, Context{});
    CheckEnv(arm_.client_env, Context{});
    for (const auto& [v, t] : arm_.vars) Check(t, Context{});
    CheckVariableCycles();
    if (recipe_.capture && arm_.capture_batch_multiplier <= 0) {
      throw YamlError(arm_.where + ": cudagraph_batch_multiplier must be positive");
    }
    for (const KvOffloadTier& tier : recipe_.kv_offload) CheckTier(tier);
    // The hang policy's URLs render against the arm's scope (not per rank:
    // a rank engine's origin comes from its own readiness URL).
    if (recipe_.hang && recipe_.hang->engine) Check(recipe_.hang->engine->metrics, Context{});
    if (recipe_.hang && recipe_.hang->router && arm_.router) Check(recipe_.hang->router->metrics, Context{});
  }

  // A KV offload tier's templates as this arm renders them: the arm's
  // names plus the tier builtins, the tier's variables and its servers'
  // ports, none of which may be a name of the arm. Rendered once per
  // engine, never per rank or per GPU.
  void CheckTier(const KvOffloadTier& tier) {
    const auto saved_scope = scope_;
    const auto saved_known = known_;
    const std::string what = " of KV offload tier " + tier.name;
    for (const auto& b : KvOffloadBuiltins()) Declare(b, "a KV offload builtin");
    for (const auto& [v, t] : tier.vars) Declare(v, "a variable" + what);
    for (const auto& p : tier.Ports()) Declare(p, "a port" + what);
    known_.clear();
    for (const auto& [n, w] : scope_) known_.push_back(n);
    tier_ = &tier;
    for (const ArgTemplate& a : tier.engine_args) CheckArg(a, Context{});
    CheckEnv(tier.engine_env, Context{});
    for (const auto& [v, t] : tier.vars) Check(t, Context{});
    for (const KvOffloadFile& f : tier.files) Check(f.text, Context{});
    for (const KvOffloadServer& s : tier.servers) {
      for (const ArgTemplate& a : s.argv) CheckArg(a, Context{});
      CheckEnv(s.env, Context{});
      for (const auto& r : s.readiness) Check(r.url, Context{});
    }
    for (const KvOffloadMemory& m : tier.host_memory) Check(m.bytes, Context{});
    scope_ = saved_scope;
    known_ = saved_known;
    tier_ = nullptr;
  }

  static bool IsTierVar(const KvOffloadTier& tier, const std::string& name) {
    return std::any_of(tier.vars.begin(), tier.vars.end(), [&](const auto& v) { return v.first == name; });
  }

 private:
  // Every name, with what declared it, so collisions can be explained.
  void DeclareNames() {
    for (const auto& b : BuiltinVariables()) Declare(b, "a builtin variable");
    for (const auto& v : recipe_.variables) Declare(v.name, "a recipe variable");
    if (recipe_.capture) Declare(recipe_.capture->variable, "the cudagraph_capture variable");
    for (const auto& p : arm_.ports) Declare(p, "a port of the arm");
    for (const auto& p : arm_.rank_ports) Declare(p, "a rank port of the arm");
    for (const auto& p : arm_.step_ports) Declare(p, "a step port of the arm");
    for (const auto& [v, t] : arm_.vars) Declare(v, "an arm variable");
    for (const auto& g : PerGpuVariables()) Declare(g, "a per_gpu variable");
    for (const auto& [n, what] : scope_) known_.push_back(n);
  }

  void Declare(const std::string& name, const std::string& what) {
    auto [it, inserted] = scope_.emplace(name, what);
    if (!inserted) {
      throw YamlError(arm_.where + ": arm '" + arm_.name + "': '" + name + "' is both " + it->second + " and " +
                      what + "; names must be unique");
    }
  }

  void Check(const LocatedTemplate& t, Context c) const {
    for (const auto& v : t.tmpl.Variables()) {
      if (!scope_.count(v)) {
        throw YamlError(t.ref.Describe() + ": unknown variable ${" + v + "} in arm '" + arm_.name +
                        "'; declared: " + JoinNames(known_));
      }
      if (v == "DP_RANK" && !c.rank) {
        throw YamlError(t.ref.Describe() + ": ${DP_RANK} in arm '" + arm_.name + "' has no value here; it is "
                        "set only in the engine of a dp_layout: rank-process arm and in {per_rank: ...} items");
      }
      if (!c.gpu && std::find(PerGpuVariables().begin(), PerGpuVariables().end(), v) != PerGpuVariables().end()) {
        throw YamlError(t.ref.Describe() + ": ${" + v + "} has a value only in {per_gpu: ...} items of engine.numa_flags");
      }
    }
  }

  void CheckList(const std::vector<ListArg>& list, Context c) const {
    for (const ListArg& a : list) {
      Context ac = c;
      if (a.kind == ListArg::Kind::kPerRank) ac.rank = true;
      if (a.kind == ListArg::Kind::kPerGpu) ac.gpu = true;
      Check(a.text, ac);
    }
  }

  void CheckEnv(const std::vector<EnvTemplate>& env, Context c) const {
    for (const auto& e : env) Check(e.value, c);
  }

  const std::vector<ListArg>* Fragment(const std::string& name) const {
    for (const auto& [n, f] : arm_.fragments) {
      if (n == name) return &f;
    }
    return nullptr;
  }

  void CheckArg(const ArgTemplate& a, Context c) {
    switch (a.kind) {
      case ArgTemplate::Kind::kText:
        Check(a.text, c);
        break;
      case ArgTemplate::Kind::kSplice: {
        const auto* f = Fragment(a.fragment);
        if (!f) {
          throw YamlError(a.ref.Describe() + ": arm '" + arm_.name + "' defines no fragment '" + a.fragment +
                          "'; add " + field_ + ".fragments." + a.fragment + " (an empty list is fine)");
        }
        spliced_.insert(a.fragment);
        CheckList(*f, c);
        break;
      }
      case ArgTemplate::Kind::kWhen:
        // A tier's `when` may name a tier variable (checked at its load).
        if (!recipe_.FindVariable(a.when) && !(tier_ && IsTierVar(*tier_, a.when))) {
          throw YamlError(a.ref.Describe() + ": 'when' names '" + a.when + "', which is not a recipe variable");
        }
        for (const auto& t : a.args) Check(t, c);
        break;
    }
  }

  void CheckProcess(const ProcessTemplate& p, Context c) {
    for (const ArgTemplate& a : p.argv) CheckArg(a, c);
    CheckEnv(p.env, c);
    for (const auto& r : p.readiness) Check(r.url, c);
    CheckList(p.numa_flags, c);
  }

  // Arm variables may reference each other; cycles are rejected now so
  // that rendering can recurse without limits.
  void CheckVariableCycles() {
    for (const auto& [v, t] : arm_.vars) vars_[v] = &t.tmpl;
    for (const auto& [v, t] : arm_.vars) {
      std::vector<std::string> path;
      Visit(v, path);
    }
  }

  void Visit(const std::string& v, std::vector<std::string>& path) {
    int& state = state_[v];  // 1 = visiting, 2 = done
    if (state == 2) return;
    path.push_back(v);
    if (state == 1) {
      throw YamlError(arm_.where + ": field '" + field_ + ".vars': variables refer to each other in a cycle: " +
                      JoinNames(path, " -> "));
    }
    state = 1;
    for (const auto& ref : vars_[v]->Variables()) {
      if (vars_.count(ref)) Visit(ref, path);
    }
    state_[v] = 2;
    path.pop_back();
  }

  const Recipe& recipe_;
  const Arm& arm_;
  const std::string field_;                      // "arms.NAME"
  std::map<std::string, std::string> scope_;     // name -> what declared it
  std::vector<std::string> known_;               // scope_'s names, sorted
  std::set<std::string> spliced_;                // fragments spliced so far
  std::map<std::string, const Template*> vars_;  // arm variables
  std::map<std::string, int> state_;             // of the cycle search
  const KvOffloadTier* tier_ = nullptr;          // the tier being checked, if any
};

}  // namespace

void CheckArm(const Recipe& recipe, const Arm& arm) { ArmChecker(recipe, arm).Run(); }

}  // namespace ix
