#include "core/launch_plan.h"

#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <map>
#include <set>

#include "core/yaml_reader.h"

namespace ix {
namespace {

// Adds `extra` to `base`: a name already there gets the new value in place,
// a new name is appended, so the written order is kept.
void MergeEnv(EnvList& base, const EnvList& extra) {
  for (const auto& [k, v] : extra) {
    auto it = std::find_if(base.begin(), base.end(), [&](const auto& e) { return e.first == k; });
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

  // Arm variables render lazily against the scope; cycles were rejected at
  // load time, so the recursion ends.
  std::optional<std::string> Get(const std::string& name) {
    if (auto it = values_.find(name); it != values_.end()) return it->second;
    for (const auto& [v, t] : arm_.vars) {
      if (v != name) continue;
      Result<std::string> r = t.tmpl.Render([this](const std::string& n) { return Get(n); });
      if (!r) return std::nullopt;
      Set(name, r.value());
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

  EnvList All() const {
    EnvList out;
    for (const auto& n : order_) out.emplace_back(n, values_.at(n));
    return out;
  }

 private:
  const Arm& arm_;
  std::map<std::string, std::string> values_;
  std::vector<std::string> order_;
};

Result<PlannedProcess> RenderProcess(const ProcessTemplate& p, const Arm& arm, Scope& scope,
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
        for (const auto& [name, fragment] : arm.fragments) {
          if (name != a.fragment) continue;
          for (const auto& t : fragment) {
            if (Status s = add(t); !s) return s.error();
          }
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

const char* ReadinessKindName(ReadinessTemplate::Kind kind) {
  return kind == ReadinessTemplate::Kind::kHttpOk ? "http_ok" : "models_nonempty";
}

int64_t CaptureSize(int64_t n, int64_t cap) {
  int64_t p = 1;
  while (p < n && p < cap) p *= 2;
  return std::min(p, cap);
}

Result<std::vector<std::string>> PortNames(const Recipe& recipe, const std::string& arm) {
  const Arm* a = recipe.FindArm(arm);
  if (!a) {
    return Error{"unknown arm '" + arm + "' for recipe " + recipe.name + "; allowed: " +
                 JoinNames(recipe.ArmNames())};
  }
  return a->ports;
}

PortList PlaceholderPorts(const std::vector<std::string>& names) {
  PortList ports;
  int next = 20000;
  for (const auto& n : names) ports.emplace_back(n, next++);
  return ports;
}

Result<LaunchPlan> RenderPlan(const Recipe& recipe, const RenderRequest& req) {
  const Arm* arm = recipe.FindArm(req.arm);
  if (!arm) {
    return Error{"unknown arm '" + req.arm + "' for recipe " + recipe.name + "; allowed: " +
                 JoinNames(recipe.ArmNames())};
  }
  if (req.conc <= 0) {
    return Error{"concurrency must be a positive integer, got " + std::to_string(req.conc)};
  }
  const std::string what = recipe.name + " arm " + arm->name;

  Scope scope(*arm);
  scope.Set("RECIPE", recipe.name);
  scope.Set("ARM", arm->name);
  scope.Set("CONC", std::to_string(req.conc));
  scope.Set("EVAL_ONLY", req.eval_only ? "1" : "0");
  scope.Set("GPUS", std::to_string(arm->gpus));
  scope.Set("TP", std::to_string(arm->tp));
  scope.Set("EP", std::to_string(arm->ep));
  scope.Set("DP", std::to_string(arm->dp));

  std::set<std::string> overridden;
  for (const auto& [name, value] : req.overrides) {
    if (!recipe.FindVariable(name)) {
      std::vector<std::string> settable;
      for (const auto& v : recipe.variables) settable.push_back(v.name);
      return Error{"cannot set '" + name + "': not a variable of recipe " + recipe.name +
                   "; settable: " + (settable.empty() ? "(none)" : JoinNames(settable))};
    }
    if (!overridden.insert(name).second) return Error{"variable '" + name + "' is set twice"};
  }
  for (const RecipeVariable& v : recipe.variables) {
    std::string value = req.eval_only && v.eval_only_value ? *v.eval_only_value : v.value;
    for (const auto& [name, o] : req.overrides) {
      if (name == v.name) value = o;
    }
    scope.Set(v.name, value);
  }

  if (recipe.capture) {
    const int64_t mult = arm->capture_batch_multiplier;
    const int64_t batch = req.conc * mult;
    if (batch % arm->dp != 0) {
      return Error{what + ": the per-rank CUDA-graph batch " + std::to_string(mult) +
                   " x CONC / " + std::to_string(arm->dp) + " is not whole for CONC=" +
                   std::to_string(req.conc) + " (" + std::to_string(mult) +
                   " x CONC must be divisible by " + std::to_string(arm->dp) +
                   ", the data-parallel size)"};
    }
    scope.Set(recipe.capture->variable,
              std::to_string(CaptureSize(batch / arm->dp * recipe.capture->tokens_per_request,
                                         recipe.capture->max)));
  }

  LaunchPlan plan;
  std::set<int> numbers;
  for (const std::string& name : arm->ports) {
    auto it = std::find_if(req.ports.begin(), req.ports.end(),
                           [&](const auto& p) { return p.first == name; });
    if (it == req.ports.end()) return Error{what + ": no port number given for " + name};
    if (it->second <= 0 || it->second > 65535) {
      return Error{what + ": port " + name + "=" + std::to_string(it->second) +
                   " is outside 1-65535"};
    }
    if (!numbers.insert(it->second).second) {
      return Error{what + ": port " + std::to_string(it->second) + " given to two names"};
    }
    scope.Set(name, std::to_string(it->second));
    plan.ports.emplace_back(name, it->second);
  }

  plan.recipe = recipe.name;
  plan.arm = arm->name;
  plan.conc = req.conc;
  plan.eval_only = req.eval_only;
  plan.gpus = arm->gpus;
  plan.tp = arm->tp;
  plan.ep = arm->ep;
  plan.dp = arm->dp;
  for (int64_t r = 0; r < arm->dp; ++r) {
    PlannedRank rank{r, {}};
    for (int64_t g = 0; g < arm->tp; ++g) rank.gpus.push_back(r * arm->tp + g);
    plan.ranks.push_back(std::move(rank));
  }

  Result<PlannedProcess> engine = RenderProcess(recipe.engine, *arm, scope, arm->engine_env);
  if (!engine) return engine.error();
  plan.processes.push_back(std::move(engine).value());
  if (arm->router) {
    Result<PlannedProcess> router = RenderProcess(*recipe.router, *arm, scope, {});
    if (!router) return router.error();
    plan.processes.push_back(std::move(router).value());
  }
  Result<EnvList> client = scope.RenderEnv(recipe.client_env);
  if (!client) return client.error();
  Result<EnvList> client_extra = scope.RenderEnv(arm->client_env);
  if (!client_extra) return client_extra.error();
  plan.client_env = std::move(client).value();
  MergeEnv(plan.client_env, client_extra.value());

  for (const HostMemoryNeed& need : recipe.host_memory) {
    const int64_t count = need.per == HostMemoryNeed::Per::kDpRank ? arm->dp
                          : need.per == HostMemoryNeed::Per::kGpu  ? arm->gpus
                                                                   : 1;
    plan.host_memory.push_back(PlannedHostMemory{need.name, need.per, need.bytes, count,
                                                 need.bytes * static_cast<uint64_t>(count)});
  }
  for (const auto& [v, t] : arm->vars) scope.Get(v);  // record them all
  plan.variables = scope.All();
  return plan;
}

Result<LaunchPlan> RenderDryRun(const Recipe& recipe, RenderRequest request) {
  Result<std::vector<std::string>> names = PortNames(recipe, request.arm);
  if (!names) return names.error();
  request.ports = PlaceholderPorts(names.value());
  return RenderPlan(recipe, request);
}

namespace {

template <class Writer>
void WriteEnv(Writer& w, const EnvList& env) {
  w.StartObject();
  for (const auto& [k, v] : env) {
    w.Key(k.c_str(), static_cast<rapidjson::SizeType>(k.size()));
    w.String(v.c_str(), static_cast<rapidjson::SizeType>(v.size()));
  }
  w.EndObject();
}

template <class Writer>
void WritePlan(Writer& w, const LaunchPlan& plan) {
  auto str = [&](const std::string& s) {
    w.String(s.c_str(), static_cast<rapidjson::SizeType>(s.size()));
  };
  w.StartObject();
  w.Key("recipe"); str(plan.recipe);
  w.Key("arm"); str(plan.arm);
  w.Key("conc"); w.Int64(plan.conc);
  w.Key("eval_only"); w.Bool(plan.eval_only);
  w.Key("gpus"); w.Int64(plan.gpus);
  w.Key("tp"); w.Int64(plan.tp);
  w.Key("ep"); w.Int64(plan.ep);
  w.Key("dp"); w.Int64(plan.dp);
  w.Key("ranks");
  w.StartArray();
  for (const auto& r : plan.ranks) {
    w.StartObject();
    w.Key("rank"); w.Int64(r.rank);
    w.Key("gpus");
    w.StartArray();
    for (int64_t g : r.gpus) w.Int64(g);
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.Key("ports");
  w.StartObject();
  for (const auto& [k, v] : plan.ports) {
    w.Key(k.c_str());
    w.Int(v);
  }
  w.EndObject();
  w.Key("processes");
  w.StartArray();
  for (const auto& p : plan.processes) {
    w.StartObject();
    w.Key("name"); str(p.name);
    w.Key("log"); str(p.log);
    w.Key("argv");
    w.StartArray();
    for (const auto& a : p.argv) str(a);
    w.EndArray();
    w.Key("env"); WriteEnv(w, p.env);
    w.Key("readiness");
    w.StartArray();
    for (const auto& r : p.readiness) {
      w.StartObject();
      w.Key("kind"); w.String(ReadinessKindName(r.kind));
      w.Key("url"); str(r.url);
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.Key("client_env"); WriteEnv(w, plan.client_env);
  w.Key("host_memory");
  w.StartArray();
  for (const auto& h : plan.host_memory) {
    w.StartObject();
    w.Key("name"); str(h.name);
    w.Key("per"); w.String(PerName(h.per));
    w.Key("bytes_each"); w.Uint64(h.bytes_each);
    w.Key("count"); w.Int64(h.count);
    w.Key("total_bytes"); w.Uint64(h.total_bytes);
    w.EndObject();
  }
  w.EndArray();
  w.Key("variables"); WriteEnv(w, plan.variables);
  w.EndObject();
}

// Quotes an argument for display only; nothing ever runs this string.
std::string DisplayArg(const std::string& a) {
  if (!a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "0123456789-_./:=,@+%") == std::string::npos) {
    return a;
  }
  std::string out = "'";
  for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string Gib(uint64_t bytes) {
  const double g = static_cast<double>(bytes) / 1073741824.0;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g GiB", g);
  return buf;
}

}  // namespace

std::string PlanToJson(const LaunchPlan& plan, bool pretty) {
  rapidjson::StringBuffer buf;
  if (pretty) {
    rapidjson::PrettyWriter<rapidjson::StringBuffer> w(buf);
    w.SetIndent(' ', 2);
    WritePlan(w, plan);
  } else {
    rapidjson::Writer<rapidjson::StringBuffer> w(buf);
    WritePlan(w, plan);
  }
  return std::string(buf.GetString(), buf.GetSize());
}

std::string PlanSummary(const LaunchPlan& plan) {
  std::string s;
  s += "recipe " + plan.recipe + ", arm " + plan.arm + ", concurrency " +
       std::to_string(plan.conc) + (plan.eval_only ? " (eval-only)" : " (throughput)") + "\n";
  s += "gpus " + std::to_string(plan.gpus) + ": tp " + std::to_string(plan.tp) + ", ep " +
       std::to_string(plan.ep) + ", dp " + std::to_string(plan.dp) + "; ranks:";
  for (const auto& r : plan.ranks) {
    s += " " + std::to_string(r.rank) + ":[";
    for (size_t i = 0; i < r.gpus.size(); ++i) s += (i ? "," : "") + std::to_string(r.gpus[i]);
    s += "]";
  }
  s += "\nports:";
  for (const auto& [k, v] : plan.ports) s += " " + k + "=" + std::to_string(v);
  s += "\n";
  for (const auto& p : plan.processes) {
    s += p.name + " (log " + p.log + "):\n  argv:";
    for (const auto& a : p.argv) s += " " + DisplayArg(a);
    s += "\n  env:";
    for (const auto& [k, v] : p.env) s += " " + k + "=" + DisplayArg(v);
    s += "\n";
    for (const auto& r : p.readiness) {
      s += "  ready when: GET " + r.url +
           (r.kind == ReadinessTemplate::Kind::kHttpOk ? " answers 200" : " lists a model") + "\n";
    }
  }
  s += "client env:";
  for (const auto& [k, v] : plan.client_env) s += " " + k + "=" + DisplayArg(v);
  s += "\n";
  for (const auto& h : plan.host_memory) {
    s += "host memory: " + h.name + " " + Gib(h.bytes_each) + " x " + std::to_string(h.count) +
         " " + PerName(h.per) + " = " + Gib(h.total_bytes) + "\n";
  }
  return s;
}

}  // namespace ix
