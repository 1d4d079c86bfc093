#include "core/recipe/recipe.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "core/recipe/recipe_check.h"
#include "core/recipe/recipe_hang.h"
#include "core/recipe/recipe_kv_offload.h"
#include "core/yaml/yaml_reader.h"

namespace ix {
namespace {

constexpr int kSchemaVersion = 1;

bool IsUpperName(const std::string& s) {
  if (s.empty() || !((s[0] >= 'A' && s[0] <= 'Z') || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

bool IsLowerName(const std::string& s) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
  });
}


// Loader: turns the YAML document into a Recipe, throwing YamlError. Nodes
// are YamlDoc ids; kNone is "not given".
class Loader {
 public:
  explicit Loader(const YamlDoc& doc) : r_(doc) {}

  Recipe Load(uint32_t root) {
    r_.CheckKeys(root, "",
                 {"schema", "name", "description", "serves", "variables", "cudagraph_capture",
                  "host_memory", "engine", "router", "client_env", "kv_offload", "hang", "arms"});
    Recipe recipe;
    recipe.file = r_.file();
    const uint32_t schema = r_.Required(root, "", "schema");
    if (r_.PositiveInt(schema, "schema") != kSchemaVersion) {
      r_.Fail(schema, "schema", "unsupported schema version; allowed: " +
                                    std::to_string(kSchemaVersion));
    }
    const uint32_t name = r_.Required(root, "", "name");
    recipe.name = r_.String(name, "name");
    if (!IsLowerName(recipe.name)) {
      r_.Fail(name, "name", "'" + recipe.name +
                                "' is not a recipe name (lower-case letters, digits, '-', '_', '.')");
    }
    if (const uint32_t d = r_.Find(root, "description"); d != kNone) {
      recipe.description = r_.String(d, "description");
    }
    if (const uint32_t s = r_.Find(root, "serves"); s != kNone) {
      ForEachYamlItem(r_, s, "serves",
                      [&](size_t, uint32_t item, const std::string& f) { recipe.serves.push_back(r_.String(item, f)); });
    }
    if (const uint32_t v = r_.Find(root, "variables"); v != kNone) LoadVariables(v, recipe);
    if (const uint32_t c = r_.Find(root, "cudagraph_capture"); c != kNone) recipe.capture = LoadCapture(c);
    if (const uint32_t h = r_.Find(root, "host_memory"); h != kNone) LoadHostMemory(h, recipe);
    recipe.engine = LoadProcess(r_.Required(root, "", "engine"), "engine", "server.log");
    if (const uint32_t rt = r_.Find(root, "router"); rt != kNone) {
      recipe.router = LoadProcess(rt, "router", "router.log");
    }
    if (const uint32_t e = r_.Find(root, "client_env"); e != kNone) recipe.client_env = LoadEnv(e, "client_env");
    if (const uint32_t k = r_.Find(root, "kv_offload"); k != kNone) LoadKvOffloadTiers(r_, k, recipe);
    if (const uint32_t h = r_.Find(root, "hang"); h != kNone) recipe.hang = LoadHang(r_, h, recipe);
    const uint32_t arms = r_.Required(root, "", "arms");
    r_.RequireMap(arms, "arms");
    if (r_.Size(arms) == 0) r_.Fail(arms, "arms", "at least one arm is required");
    ForEachYamlEntry(r_, arms, "arms", [&](const std::string& arm_name, uint32_t key, uint32_t value) {
      recipe.arms.push_back(LoadArm(arm_name, key, value));
    });
    for (const Arm& arm : recipe.arms) CheckArm(recipe, arm);
    return recipe;
  }

 private:
  static constexpr uint32_t kNone = YamlReader::kNone;

  LocatedTemplate Tmpl(uint32_t node, const std::string& field) { return LoadTemplate(r_, node, field); }

  // Variable and port names: upper-case letters, digits and '_'.
  void RequireUpperName(uint32_t node, const std::string& field, const std::string& name, const char* what) {
    if (!IsUpperName(name)) r_.Fail(node, field, std::string(what) + " names are upper-case letters, digits and '_'");
  }

  void LoadVariables(uint32_t vars, Recipe& recipe) {
    ForEachYamlEntry(r_, vars, "variables", [&](const std::string& name, uint32_t key, uint32_t def) {
      RecipeVariable v;
      v.name = name;
      const std::string field = Child("variables", v.name);
      RequireUpperName(key, field, v.name, "variable");
      if (r_.IsMap(def)) {
        r_.CheckKeys(def, field, {"value", "eval_only", "doc"});
        v.value = r_.String(r_.Required(def, field, "value"), Child(field, "value"));
        if (const uint32_t e = r_.Find(def, "eval_only"); e != kNone) {
          v.eval_only_value = r_.String(e, Child(field, "eval_only"));
        }
        if (const uint32_t d = r_.Find(def, "doc"); d != kNone) v.doc = r_.String(d, Child(field, "doc"));
      } else if (r_.IsNull(def)) {
        v.value = "";
      } else {
        v.value = r_.String(def, field);
      }
      recipe.variables.push_back(std::move(v));
    });
  }

  CaptureRule LoadCapture(uint32_t node) {
    const std::string field = "cudagraph_capture";
    r_.CheckKeys(node, field, {"variable", "tokens_per_request", "max"});
    CaptureRule c;
    const uint32_t var = r_.Required(node, field, "variable");
    c.variable = r_.String(var, Child(field, "variable"));
    RequireUpperName(var, Child(field, "variable"), c.variable, "variable");
    c.tokens_per_request = r_.PositiveInt(r_.Required(node, field, "tokens_per_request"),
                                          Child(field, "tokens_per_request"));
    c.max = r_.PositiveInt(r_.Required(node, field, "max"), Child(field, "max"));
    return c;
  }

  void LoadHostMemory(uint32_t list, Recipe& recipe) {
    ForEachYamlItem(r_, list, "host_memory", [&](size_t, uint32_t n, const std::string& field) {
      r_.CheckKeys(n, field, {"name", "per", "bytes", "pinned", "doc"});
      HostMemoryNeed need;
      need.name = r_.String(r_.Required(n, field, "name"), Child(field, "name"));
      need.per = LoadHostMemoryPer(r_, n, field);
      need.bytes = r_.Bytes(r_.Required(n, field, "bytes"), Child(field, "bytes"));
      if (const uint32_t p = r_.Find(n, "pinned"); p != kNone) need.pinned = r_.Bool(p, Child(field, "pinned"));
      if (const uint32_t d = r_.Find(n, "doc"); d != kNone) need.doc = r_.String(d, Child(field, "doc"));
      recipe.host_memory.push_back(std::move(need));
    });
  }

  std::vector<EnvTemplate> LoadEnv(uint32_t map, const std::string& field) {
    std::vector<EnvTemplate> env;
    ForEachYamlEntry(r_, map, field, [&](const std::string& name, uint32_t key, uint32_t value) {
      const std::string f = Child(field, name);
      if (!IsUpperName(name) && !IsLowerName(name)) r_.Fail(key, f, "not an environment variable name");
      env.push_back(EnvTemplate{name, Tmpl(value, f)});
    });
    return env;
  }

  std::vector<LocatedTemplate> LoadTemplateList(uint32_t list, const std::string& field) {
    std::vector<LocatedTemplate> out;
    ForEachYamlItem(r_, list, field, [&](size_t, uint32_t item, const std::string& f) { out.push_back(Tmpl(item, f)); });
    return out;
  }

  // A list of strings, {per_rank: T} and (when allowed) {per_gpu: T}.
  std::vector<ListArg> LoadListArgs(uint32_t list, const std::string& field, bool per_gpu) {
    std::vector<ListArg> out;
    ForEachYamlItem(r_, list, field, [&](size_t, uint32_t item, const std::string& f) {
      ListArg a;
      if (r_.IsMap(item)) {
        if (per_gpu) {
          r_.CheckKeys(item, f, {"per_rank", "per_gpu"});
        } else {
          r_.CheckKeys(item, f, {"per_rank"});
        }
        if (r_.Size(item) != 1) r_.Fail(item, f, per_gpu ? "give exactly one of per_rank, per_gpu" : "give per_rank");
        const uint32_t rank = r_.Find(item, "per_rank");
        a.kind = rank != kNone ? ListArg::Kind::kPerRank : ListArg::Kind::kPerGpu;
        a.text = rank != kNone ? Tmpl(rank, Child(f, "per_rank"))
                               : Tmpl(r_.Find(item, "per_gpu"), Child(f, "per_gpu"));
      } else if (r_.IsScalar(item)) {
        a.text = Tmpl(item, f);
      } else {
        r_.Fail(item, f, per_gpu ? "expected a string, {per_rank: TEMPLATE} or {per_gpu: TEMPLATE}"
                                 : "expected a string or {per_rank: TEMPLATE}");
      }
      out.push_back(std::move(a));
    });
    return out;
  }

  ProcessTemplate LoadProcess(uint32_t node, const std::string& field, const std::string& default_log) {
    if (field == "engine") {
      r_.CheckKeys(node, field, {"log", "argv", "env", "readiness", "numa_flags"});
    } else {
      r_.CheckKeys(node, field, {"log", "version", "argv", "env", "readiness"});
    }
    ProcessTemplate p;
    p.name = field;
    p.log = default_log;
    if (const uint32_t log = r_.Find(node, "log"); log != kNone) {
      p.log = r_.String(log, Child(field, "log"));
      if (!IsLowerName(p.log)) r_.Fail(log, Child(field, "log"), "must be a plain file name");
    }
    if (const uint32_t v = r_.Find(node, "version"); v != kNone) p.version = r_.String(v, Child(field, "version"));
    p.argv = LoadArgv(r_.Required(node, field, "argv"), Child(field, "argv"));
    if (const uint32_t env = r_.Find(node, "env"); env != kNone) p.env = LoadEnv(env, Child(field, "env"));
    if (const uint32_t nf = r_.Find(node, "numa_flags"); nf != kNone) {
      p.numa_flags = LoadListArgs(nf, Child(field, "numa_flags"), true);
    }
    if (const uint32_t list = r_.Find(node, "readiness"); list != kNone) {
      p.readiness = LoadReadinessList(r_, list, Child(field, "readiness"));
    }
    return p;
  }

  // The program and its arguments: strings, {splice: FRAGMENT} and
  // {when: VARIABLE, args: [...]}; the first a plain string.
  std::vector<ArgTemplate> LoadArgv(uint32_t argv, const std::string& argv_field) {
    std::vector<ArgTemplate> out;
    ForEachYamlItem(r_, argv, argv_field, [&](size_t i, uint32_t item, const std::string& f) {
      ArgTemplate a;
      a.ref = SourceRef{r_.Where(item), f};
      const uint32_t splice = r_.Find(item, "splice");
      if (splice != kNone) {
        r_.CheckKeys(item, f, {"splice"});
        a.kind = ArgTemplate::Kind::kSplice;
        a.fragment = r_.String(splice, Child(f, "splice"));
      } else if (r_.IsMap(item)) {
        r_.CheckKeys(item, f, {"when", "args"});
        a.kind = ArgTemplate::Kind::kWhen;
        a.when = r_.String(r_.Required(item, f, "when"), Child(f, "when"));
        a.args = LoadTemplateList(r_.Required(item, f, "args"), Child(f, "args"));
      } else if (r_.IsScalar(item)) {
        a.kind = ArgTemplate::Kind::kText;
        a.text = Tmpl(item, f);
      } else {
        r_.Fail(item, f, "expected a string, {splice: FRAGMENT} or {when: VARIABLE, args: [...]}");
      }
      if (i == 0 && a.kind != ArgTemplate::Kind::kText) {
        r_.Fail(item, f, "the first argument is the program and must be a plain string");
      }
      out.push_back(std::move(a));
    });
    if (out.empty()) r_.Fail(argv, argv_field, "must name the program to run");
    return out;
  }

  // Port names of `list` at `field`, appended to `into` (arm.ports,
  // rank_ports or step_ports); a name the arm already has in any fails.
  void LoadPorts(uint32_t list, const std::string& field, const Arm& arm, std::vector<std::string>& into) {
    ForEachYamlItem(r_, list, field, [&](size_t, uint32_t item, const std::string& f) {
      const std::string& p = r_.String(item, f);
      RequireUpperName(item, f, p, "port");
      const auto has = [&p](const std::vector<std::string>& names) {
        return std::find(names.begin(), names.end(), p) != names.end();
      };
      if (has(arm.ports) || has(arm.rank_ports) || has(arm.step_ports)) {
        r_.Fail(item, f, "port '" + p + "' given twice");
      }
      into.push_back(p);
    });
  }

  Arm LoadArm(const std::string& name, uint32_t key, uint32_t node) {
    const std::string field = Child("arms", name);
    if (!IsLowerName(name)) r_.Fail(key, field, "arm names are lower-case letters and digits");
    r_.CheckKeys(node, field,
                 {"gpus", "tp", "ep", "dp", "router", "dp_layout", "rank_ports",
                  "cudagraph_batch_multiplier", "ports", "vars", "fragments", "engine_env", "client_env",
                  "nodes", "pp", "step_ports", "others"});
    Arm arm;
    arm.name = name;
    arm.where = r_.Where(key);
    LoadShape(node, field, arm);
    if (const uint32_t router = r_.Find(node, "router"); router != kNone) {
      arm.router = r_.Bool(router, Child(field, "router"));
    }
    if (const uint32_t m = r_.Find(node, "cudagraph_batch_multiplier"); m != kNone) {
      arm.capture_batch_multiplier = r_.PositiveInt(m, Child(field, "cudagraph_batch_multiplier"));
    }
    LoadPorts(r_.Required(node, field, "ports"), Child(field, "ports"), arm, arm.ports);
    if (const uint32_t rank_ports = r_.Find(node, "rank_ports"); rank_ports != kNone) {
      const std::string rf = Child(field, "rank_ports");
      if (arm.dp_layout != DpLayout::kRankProcess) {
        r_.Fail(rank_ports, rf, "rank ports need dp_layout: rank-process (one engine process per rank)");
      }
      LoadPorts(rank_ports, rf, arm, arm.rank_ports);
    }
    if (const uint32_t vars = r_.Find(node, "vars"); vars != kNone) {
      const std::string vf = Child(field, "vars");
      ForEachYamlEntry(r_, vars, vf, [&](const std::string& v, uint32_t var_key, uint32_t value) {
        RequireUpperName(var_key, Child(vf, v), v, "variable");
        arm.vars.emplace_back(v, Tmpl(value, Child(vf, v)));
      });
    }
    if (const uint32_t fragments = r_.Find(node, "fragments"); fragments != kNone) {
      arm.fragments = LoadFragments(fragments, Child(field, "fragments"));
    }
    if (const uint32_t e = r_.Find(node, "engine_env"); e != kNone) arm.engine_env = LoadEnv(e, Child(field, "engine_env"));
    if (const uint32_t e = r_.Find(node, "client_env"); e != kNone) arm.client_env = LoadEnv(e, Child(field, "client_env"));
    LoadAcrossNodes(node, field, arm);
    return arm;
  }

  // {NAME: [items]} in written order; a null value is an empty fragment.
  std::vector<std::pair<std::string, std::vector<ListArg>>> LoadFragments(uint32_t map, const std::string& ff) {
    std::vector<std::pair<std::string, std::vector<ListArg>>> out;
    ForEachYamlEntry(r_, map, ff, [&](const std::string& f, uint32_t, uint32_t value) {
      out.emplace_back(f, r_.IsNull(value) ? std::vector<ListArg>{} : LoadListArgs(value, Child(ff, f), false));
    });
    return out;
  }

  // gpus (per node), nodes, tp, pp, ep, dp and dp_layout, with the rules
  // that tie them: every GPU of every node holds one worker, and a step
  // across nodes splits either its DP ranks or its pipeline stages evenly
  // over the nodes (vLLM's two multi-node modes without Ray).
  void LoadShape(uint32_t node, const std::string& field, Arm& arm) {
    arm.gpus = r_.PositiveInt(r_.Required(node, field, "gpus"), Child(field, "gpus"));
    if (const uint32_t n = r_.Find(node, "nodes"); n != kNone) arm.nodes = r_.PositiveInt(n, Child(field, "nodes"));
    arm.tp = r_.PositiveInt(r_.Required(node, field, "tp"), Child(field, "tp"));
    if (const uint32_t pp = r_.Find(node, "pp"); pp != kNone) arm.pp = r_.PositiveInt(pp, Child(field, "pp"));
    const uint32_t ep = r_.Required(node, field, "ep");
    arm.ep = r_.PositiveInt(ep, Child(field, "ep"));
    arm.dp = r_.PositiveInt(r_.Required(node, field, "dp"), Child(field, "dp"));
    const auto n = [](int64_t v) { return std::to_string(v); };
    if (arm.tp * arm.pp * arm.dp != arm.gpus * arm.nodes) {
      r_.Fail(node, field, "tp x pp x dp must equal gpus x nodes (" + n(arm.tp) + " x " + n(arm.pp) + " x " +
                               n(arm.dp) + " != " + n(arm.gpus) + " x " + n(arm.nodes) + "; gpus is per node)");
    }
    if (arm.pp > 1 && arm.dp > 1) {
      r_.Fail(node, field, "pp > 1 needs dp: 1 (pipeline stages and data-parallel ranks together are not supported)");
    }
    if ((arm.gpus * arm.nodes) % arm.ep != 0) {
      r_.Fail(ep, Child(field, "ep"), "ep must divide gpus x nodes (" + n(arm.gpus * arm.nodes) + ")");
    }
    if (arm.nodes > 1 && !(arm.pp == 1 && arm.dp % arm.nodes == 0) && !(arm.dp == 1 && arm.pp % arm.nodes == 0)) {
      r_.Fail(node, Child(field, "nodes"),
              "an arm across " + n(arm.nodes) + " nodes needs either pp: 1 and dp divisible by nodes (data "
              "parallel across nodes) or dp: 1 and pp divisible by nodes (pipeline stages across nodes); got pp " +
                  n(arm.pp) + ", dp " + n(arm.dp));
    }
    if (const uint32_t layout = r_.Find(node, "dp_layout"); layout != kNone) {
      const std::string lf = Child(field, "dp_layout");
      arm.dp_layout = r_.Choice(layout, lf, {"engine", "rank-process"}) == "engine" ? DpLayout::kEngine
                                                                                    : DpLayout::kRankProcess;
      if (arm.dp_layout == DpLayout::kRankProcess && arm.nodes > 1) {
        r_.Fail(layout, lf, "rank-process is single-node only; an arm across nodes runs one engine per node "
                            "(dp_layout: engine)");
      }
    }
  }

  // step_ports and others.fragments: only for an arm across nodes; every
  // fragment the other nodes replace must be one the arm defines.
  void LoadAcrossNodes(uint32_t node, const std::string& field, Arm& arm) {
    const auto only_across = [&](uint32_t n, const std::string& f) {
      if (arm.nodes == 1) r_.Fail(n, f, "only for an arm across nodes (nodes > 1)");
    };
    if (const uint32_t sp = r_.Find(node, "step_ports"); sp != kNone) {
      only_across(sp, Child(field, "step_ports"));
      LoadPorts(sp, Child(field, "step_ports"), arm, arm.step_ports);
    }
    const uint32_t others = r_.Find(node, "others");
    if (others == kNone) return;
    const std::string of = Child(field, "others");
    only_across(others, of);
    r_.CheckKeys(others, of, {"fragments"});
    const uint32_t fragments = r_.Required(others, of, "fragments");
    const std::string ff = Child(of, "fragments");
    arm.others_fragments = LoadFragments(fragments, ff);
    const std::vector<uint32_t>& items = r_.node(fragments).items;
    for (size_t i = 0; i < arm.others_fragments.size(); ++i) {
      const std::string& f = arm.others_fragments[i].first;
      const bool defined = std::any_of(arm.fragments.begin(), arm.fragments.end(),
                                       [&](const auto& d) { return d.first == f; });
      if (!defined) {
        r_.Fail(items[2 * i], Child(ff, f), "replaces fragment '" + f + "', which the arm does not define in " +
                                                Child(field, "fragments"));
      }
    }
  }

  YamlReader r_;
};

}  // namespace

const std::vector<std::string>& BuiltinVariables() {
  static const std::vector<std::string> kNames = {
      "RECIPE", "ARM",   "CONC",      "EVAL_ONLY", "GPUS",     "TP",           "EP", "DP", "DP_RANK",
      "PP",     "NODES", "NODE_RANK", "HEAD_ADDR", "DP_LOCAL", "DP_START_RANK"};
  return kNames;
}

const std::vector<std::string>& PerGpuVariables() {
  static const std::vector<std::string> kNames = {"GPU_NUMA", "GPU_CPUS"};
  return kNames;
}

const Arm* Recipe::FindArm(const std::string& arm_name) const {
  for (const Arm& a : arms) {
    if (a.name == arm_name) return &a;
  }
  return nullptr;
}

const KvOffloadTier* Recipe::FindKvOffload(const std::string& tier_name) const {
  for (const KvOffloadTier& t : kv_offload) {
    if (t.name == tier_name) return &t;
  }
  return nullptr;
}

std::vector<std::string> Recipe::ArmNames() const {
  std::vector<std::string> names;
  for (const Arm& a : arms) names.push_back(a.name);
  return names;
}

const RecipeVariable* Recipe::FindVariable(const std::string& var) const {
  for (const RecipeVariable& v : variables) {
    if (v.name == var) return &v;
  }
  return nullptr;
}

namespace {

Result<Recipe> LoadFromRoot(const Result<YamlDoc>& doc) {
  if (!doc) return doc.error();
  try {
    const YamlReader r(doc.value());
    const uint32_t root = doc.value().root();
    if (!r.IsMap(root)) {
      r.Fail(root, "", "a recipe must be a YAML mapping with schema, name, engine and arms");
    }
    return Loader(doc.value()).Load(root);
  } catch (const YamlError& e) {
    return Error{e.what()};
  }
}

}  // namespace

Result<Recipe> LoadRecipeString(const std::string& text, const std::string& name) {
  return LoadFromRoot(ParseYamlString(text, name));
}

Result<Recipe> LoadRecipeFile(const std::string& path) {
  Result<Recipe> recipe = LoadFromRoot(ParseYamlFile(path));
  if (!recipe) return recipe;
  const std::string stem = std::filesystem::path(path).stem().string();
  if (recipe.value().name != stem) {
    return Error{path + ": field 'name': '" + recipe.value().name +
                 "' must match the file name '" + stem + "'"};
  }
  return recipe;
}

std::vector<std::string> ListRecipes(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".yaml" && entry.is_regular_file(ec)) {
      names.push_back(entry.path().stem().string());
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

Result<Recipe> LoadRecipeByName(const std::string& dir, const std::string& name) {
  const std::vector<std::string> available = ListRecipes(dir);
  if (!IsLowerName(name) || std::find(available.begin(), available.end(), name) == available.end()) {
    return Error{"unknown recipe '" + name + "' in " + dir + "; available: " +
                 (available.empty() ? std::string("(none)") : JoinNames(available))};
  }
  return LoadRecipeFile((std::filesystem::path(dir) / (name + ".yaml")).string());
}

}  // namespace ix
