// The `kv_offload:` section of a recipe: per tier, what selecting it adds to
// a plan (engine args and env, tier variables, files, servers, host memory).
// The per-arm name checks of the tier's templates are in recipe_check.cc.
#include "core/recipe/recipe_kv_offload.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

namespace ix {
namespace {


bool IsUpperName(const std::string& s) {
  if (s.empty() || !((s[0] >= 'A' && s[0] <= 'Z') || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'; });
}

// Tier, file, server and log names: lower-case letters, digits, '-', '_', '.'.
bool IsLowerName(const std::string& s) {
  if (s.empty() || s == "." || s == "..") return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
  });
}

// Loads one tier. Invariant: r_ outlives it; every method either returns
// what it read or throws YamlError at the node it read.
class TierLoader {
 public:
  TierLoader(const YamlReader& r, const Recipe& recipe) : r_(r), recipe_(recipe) {}

  KvOffloadTier Load(const std::string& name, uint32_t key, uint32_t def) {
    const std::string field = Child("kv_offload", name);
    if (!IsLowerName(name) || name == "none") {
      r_.Fail(key, field, "'" + name + "' is not a tier name (lower-case letters, digits, '-', '_', '.'; not 'none')");
    }
    KvOffloadTier tier;
    tier.name = name;
    tier.where = r_.Where(key);
    if (r_.IsNull(def)) return tier;  // `mooncake:` alone: served, adds nothing
    r_.CheckKeys(def, field, {"doc", "vars", "engine_args", "engine_env", "files", "servers", "host_memory"});
    if (const uint32_t d = r_.Find(def, "doc"); d != kNone) tier.doc = r_.String(d, Child(field, "doc"));
    if (const uint32_t v = r_.Find(def, "vars"); v != kNone) {
      const std::string vf = Child(field, "vars");
      ForEachYamlEntry(r_, v, vf, [&](const std::string& var, uint32_t k, uint32_t value) {
        if (!IsUpperName(var)) r_.Fail(k, Child(vf, var), "variable names are upper-case letters, digits and '_'");
        tier.vars.emplace_back(var, Tmpl(value, Child(vf, var)));
      });
    }
    if (const uint32_t a = r_.Find(def, "engine_args"); a != kNone) {
      tier.engine_args = Args(a, Child(field, "engine_args"), tier, false);
    }
    if (const uint32_t e = r_.Find(def, "engine_env"); e != kNone) tier.engine_env = Env(e, Child(field, "engine_env"));
    if (const uint32_t f = r_.Find(def, "files"); f != kNone) Files(f, Child(field, "files"), tier);
    if (const uint32_t s = r_.Find(def, "servers"); s != kNone) Servers(s, Child(field, "servers"), tier);
    if (const uint32_t h = r_.Find(def, "host_memory"); h != kNone) Memory(h, Child(field, "host_memory"), tier);
    CheckVarCycles(tier, Child(field, "vars"));
    tier.needs = Needs(tier);
    return tier;
  }

 private:
  static constexpr uint32_t kNone = YamlReader::kNone;

  LocatedTemplate Tmpl(uint32_t node, const std::string& field) { return LoadTemplate(r_, node, field); }

  std::vector<EnvTemplate> Env(uint32_t map, const std::string& field) {
    std::vector<EnvTemplate> env;
    ForEachYamlEntry(r_, map, field, [&](const std::string& name, uint32_t key, uint32_t value) {
      if (!IsUpperName(name) && !IsLowerName(name)) r_.Fail(key, Child(field, name), "not an environment variable name");
      env.push_back(EnvTemplate{name, Tmpl(value, Child(field, name))});
    });
    return env;
  }

  // Plain templates and {when: VARIABLE, args: [...]} (a recipe or tier
  // variable); `program`: a server's argv, whose first item is the program.
  std::vector<ArgTemplate> Args(uint32_t list, const std::string& field, const KvOffloadTier& tier, bool program) {
    std::vector<ArgTemplate> out;
    ForEachYamlItem(r_, list, field, [&](size_t i, uint32_t item, const std::string& f) {
      ArgTemplate a;
      a.ref = SourceRef{r_.Where(item), f};
      if (r_.IsMap(item)) {
        if (program && i == 0) r_.Fail(item, f, "the first argument is the program and must be a plain string");
        r_.CheckKeys(item, f, {"when", "args"});
        a.kind = ArgTemplate::Kind::kWhen;
        const uint32_t when = r_.Required(item, f, "when");
        a.when = r_.String(when, Child(f, "when"));
        const bool tier_var = std::any_of(tier.vars.begin(), tier.vars.end(), [&](const auto& v) { return v.first == a.when; });
        if (!recipe_.FindVariable(a.when) && !tier_var) {
          r_.Fail(when, Child(f, "when"), "'" + a.when + "' is not a recipe variable or a variable of the tier");
        }
        ForEachYamlItem(r_, r_.Required(item, f, "args"), Child(f, "args"),
                        [&](size_t, uint32_t arg, const std::string& af) { a.args.push_back(Tmpl(arg, af)); });
      } else if (r_.IsScalar(item)) {
        a.text = Tmpl(item, f);
      } else {
        r_.Fail(item, f, "expected a string or {when: VARIABLE, args: [...]}");
      }
      out.push_back(std::move(a));
    });
    if (program && out.empty()) r_.Fail(list, field, "must name the program to run");
    return out;
  }

  // A plain file name, unique among `taken` (the tier's names of that kind).
  std::string PlainName(uint32_t node, const std::string& field, std::set<std::string>& taken, const char* what) {
    const std::string name = r_.String(node, field);
    if (!IsLowerName(name)) r_.Fail(node, field, std::string(what) + " names are plain lower-case file names");
    if (!taken.insert(name).second) r_.Fail(node, field, std::string(what) + " '" + name + "' given twice");
    return name;
  }

  void Files(uint32_t list, const std::string& field, KvOffloadTier& tier) {
    std::set<std::string> names;
    ForEachYamlItem(r_, list, field, [&](size_t, uint32_t n, const std::string& f) {
      r_.CheckKeys(n, f, {"name", "text"});
      KvOffloadFile file;
      file.name = PlainName(r_.Required(n, f, "name"), Child(f, "name"), names, "file");
      file.text = Tmpl(r_.Required(n, f, "text"), Child(f, "text"));
      tier.files.push_back(std::move(file));
    });
  }

  void Servers(uint32_t list, const std::string& field, KvOffloadTier& tier) {
    std::set<std::string> names, logs, ports;
    ForEachYamlItem(r_, list, field, [&](size_t, uint32_t n, const std::string& f) {
      r_.CheckKeys(n, f, {"name", "argv", "env", "log", "ports", "readiness"});
      KvOffloadServer s;
      s.name = PlainName(r_.Required(n, f, "name"), Child(f, "name"), names, "server");
      if (s.name == "engine" || s.name == "router" || s.name.rfind("engine-", 0) == 0) {
        r_.Fail(r_.Find(n, "name"), Child(f, "name"), "'" + s.name + "' is the name of a step process");
      }
      // The default log is NAME.log; the engine's and router's are taken.
      const uint32_t log = r_.Find(n, "log");
      s.log = log != kNone ? r_.String(log, Child(f, "log")) : s.name + ".log";
      if (!IsLowerName(s.log)) r_.Fail(log != kNone ? log : n, Child(f, "log"), "must be a plain file name");
      if (s.log == recipe_.engine.log || (recipe_.router && s.log == recipe_.router->log) || !logs.insert(s.log).second) {
        r_.Fail(log != kNone ? log : n, Child(f, "log"), "'" + s.log + "' is the log of another process of the step");
      }
      s.argv = Args(r_.Required(n, f, "argv"), Child(f, "argv"), tier, true);
      if (const uint32_t e = r_.Find(n, "env"); e != kNone) s.env = Env(e, Child(f, "env"));
      if (const uint32_t p = r_.Find(n, "ports"); p != kNone) {
        ForEachYamlItem(r_, p, Child(f, "ports"), [&](size_t, uint32_t item, const std::string& pf) {
          const std::string& port = r_.String(item, pf);
          if (!IsUpperName(port)) r_.Fail(item, pf, "port names are upper-case letters, digits and '_'");
          if (!ports.insert(port).second) r_.Fail(item, pf, "port '" + port + "' given twice in the tier");
          s.ports.push_back(port);
        });
      }
      if (const uint32_t rd = r_.Find(n, "readiness"); rd != kNone) s.readiness = LoadReadinessList(r_, rd, Child(f, "readiness"));
      tier.servers.push_back(std::move(s));
    });
  }

  void Memory(uint32_t list, const std::string& field, KvOffloadTier& tier) {
    std::set<std::string> names;
    ForEachYamlItem(r_, list, field, [&](size_t, uint32_t n, const std::string& f) {
      r_.CheckKeys(n, f, {"name", "per", "bytes", "pinned", "doc"});
      KvOffloadMemory m;
      m.name = PlainName(r_.Required(n, f, "name"), Child(f, "name"), names, "host memory");
      if (std::any_of(recipe_.host_memory.begin(), recipe_.host_memory.end(), [&](const HostMemoryNeed& h) { return h.name == m.name; })) {
        r_.Fail(r_.Find(n, "name"), Child(f, "name"), "'" + m.name + "' is already a host_memory need of the recipe");
      }
      m.per = LoadHostMemoryPer(r_, n, f);
      m.bytes = Tmpl(r_.Required(n, f, "bytes"), Child(f, "bytes"));
      if (const uint32_t p = r_.Find(n, "pinned"); p != kNone) m.pinned = r_.Bool(p, Child(f, "pinned"));
      if (const uint32_t d = r_.Find(n, "doc"); d != kNone) m.doc = r_.String(d, Child(f, "doc"));
      tier.host_memory.push_back(std::move(m));
    });
  }

  // Tier variables may refer to each other, never in a cycle, so that
  // rendering them can recurse without a limit.
  void CheckVarCycles(const KvOffloadTier& tier, const std::string& field) {
    std::map<std::string, const Template*> vars;
    for (const auto& [v, t] : tier.vars) vars[v] = &t.tmpl;
    std::map<std::string, int> state;  // 1 visiting, 2 done
    std::vector<std::string> path;
    std::function<void(const std::string&)> visit = [&](const std::string& v) {
      if (state[v] == 2) return;
      path.push_back(v);
      if (state[v] == 1) {
        const auto at = std::find_if(tier.vars.begin(), tier.vars.end(), [&](const auto& x) { return x.first == v; });
        throw YamlError(at->second.ref.where + ": field '" + field + "': variables refer to each other in a cycle: " +
                        JoinNames(path, " -> "));
      }
      state[v] = 1;
      for (const auto& ref : vars[v]->Variables()) {
        if (vars.count(ref)) visit(ref);
      }
      state[v] = 2;
      path.pop_back();
    };
    for (const auto& [v, t] : tier.vars) visit(v);
  }

  // The tier builtins any of its templates (vars included) names.
  static std::vector<std::string> Needs(const KvOffloadTier& tier) {
    std::set<std::string> used;
    const auto add = [&](const LocatedTemplate& t) {
      for (const auto& v : t.tmpl.Variables()) used.insert(v);
    };
    const auto add_args = [&](const std::vector<ArgTemplate>& args) {
      for (const ArgTemplate& a : args) {
        add(a.text);
        for (const auto& t : a.args) add(t);
      }
    };
    add_args(tier.engine_args);
    for (const auto& e : tier.engine_env) add(e.value);
    for (const auto& [v, t] : tier.vars) add(t);
    for (const auto& f : tier.files) add(f.text);
    for (const auto& s : tier.servers) {
      add_args(s.argv);
      for (const auto& e : s.env) add(e.value);
      for (const auto& r : s.readiness) add(r.url);
    }
    for (const auto& m : tier.host_memory) add(m.bytes);
    std::vector<std::string> out;
    for (const auto& b : KvOffloadBuiltins()) {
      if (used.count(b)) out.push_back(b);
    }
    return out;
  }

  const YamlReader& r_;
  const Recipe& recipe_;
};

}  // namespace

void LoadKvOffloadTiers(const YamlReader& r, uint32_t map, Recipe& recipe) {
  r.RequireMap(map, "kv_offload");
  std::set<std::string> seen;
  const std::vector<uint32_t>& items = r.node(map).items;
  for (size_t k = 0; k + 1 < items.size(); k += 2) {
    const std::string name = r.String(items[k], "kv_offload");
    if (!seen.insert(name).second) r.Fail(items[k], Child("kv_offload", name), "given twice");
    recipe.kv_offload.push_back(TierLoader(r, recipe).Load(name, items[k], items[k + 1]));
  }
}

LocatedTemplate LoadTemplate(const YamlReader& r, uint32_t node, const std::string& field) {
  Result<Template> t = Template::Parse(r.String(node, field));
  if (!t) r.Fail(node, field, t.error().message);
  return LocatedTemplate{std::move(t).value(), SourceRef{r.Where(node), field}};
}

HostMemoryNeed::Per LoadHostMemoryPer(const YamlReader& r, uint32_t node, const std::string& field) {
  const std::string per = r.Choice(r.Required(node, field, "per"), Child(field, "per"), {"dp_rank", "gpu", "step"});
  return per == "dp_rank" ? HostMemoryNeed::Per::kDpRank
         : per == "gpu"   ? HostMemoryNeed::Per::kGpu
                          : HostMemoryNeed::Per::kStep;
}

std::vector<ReadinessTemplate> LoadReadinessList(const YamlReader& r, uint32_t list, const std::string& rf) {
  static const std::vector<std::pair<std::string, ReadinessTemplate::Kind>> kKinds = {
      {"http_ok", ReadinessTemplate::Kind::kHttpOk},
      {"models_nonempty", ReadinessTemplate::Kind::kModelsNonEmpty},
      {"tcp_listening", ReadinessTemplate::Kind::kTcpListening}};
  std::vector<ReadinessTemplate> out;
  ForEachYamlItem(r, list, rf, [&](size_t, uint32_t item, const std::string& f) {
    r.CheckKeys(item, f, {"http_ok", "models_nonempty", "tcp_listening"});
    if (r.Size(item) != 1) r.Fail(item, f, "give exactly one of http_ok, models_nonempty, tcp_listening");
    for (const auto& [key, kind] : kKinds) {
      const uint32_t v = r.Find(item, key);
      if (v == YamlReader::kNone) continue;
      out.push_back(ReadinessTemplate{kind, LoadTemplate(r, v, Child(f, key))});
    }
  });
  return out;
}

const std::vector<std::string>& KvOffloadBuiltins() {
  static const std::vector<std::string> kNames = {"TOTAL_CPU_DRAM_GB",      "GPU_COUNT",       "KV_OFFLOAD_BYTES_PER_RANK",
                                                  "KV_OFFLOAD_GB_PER_RANK", "KV_LAZY_OFFLOAD", "RESULT_DIR"};
  return kNames;
}

std::vector<std::string> KvOffloadTier::Ports() const {
  std::vector<std::string> out;
  for (const auto& s : servers) out.insert(out.end(), s.ports.begin(), s.ports.end());
  return out;
}

bool KvOffloadTier::Needs(const std::string& builtin) const {
  return std::find(needs.begin(), needs.end(), builtin) != needs.end();
}

}  // namespace ix
