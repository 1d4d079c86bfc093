#include "submitter/sweep/sweep_plan.h"

#include <algorithm>

#include "core/recipe/launch_plan.h"
#include "core/matrix/matrix_json.h"
#include "core/node/topology.h"
#include "core/yaml/yaml_reader.h"
#include "submitter/sweep/multinode_arm.h"

namespace ix {

Result<RecipeIndex> IndexRecipes(const std::string& recipe_dir) {
  RecipeIndex index;
  for (const std::string& name : ListRecipes(recipe_dir)) {
    Result<Recipe> r = LoadRecipeByName(recipe_dir, name);
    if (!r) return r.error();
    for (const std::string& key : r.value().serves) {
      auto [it, inserted] = index.by_key.emplace(key, name);
      if (!inserted) {
        return Error{"config key '" + key + "' is served by two recipes in " + recipe_dir + ": " + it->second +
                     " and " + name + "; a key must have one recipe"};
      }
    }
    index.recipes.emplace(name, std::move(r).value());
  }
  return index;
}

std::string BucketOfJobKey(const std::string& key) {
  if (key.rfind("bucket:", 0) != 0) return key;
  return key.substr(7, key.find('#') == std::string::npos ? std::string::npos : key.find('#') - 7);
}

std::string SkippedEntry::Describe() const {
  std::string c;
  for (int64_t v : concs) c += (c.empty() ? "" : ", ") + std::to_string(v);
  return config_key + " (" + where + ", " + path + ") conc [" + c + "]: " + reason;
}

std::string ArmFor(const SearchSpaceEntry& ss) {
  // A multinode row has no top-level tp: its worker is under prefill.
  if (ss.tp == 0 && ss.prefill.tp > 0) return MultinodeArmName(ss.prefill);
  const std::string n = std::to_string(ss.tp);
  if (ss.dp_attn) return "dep" + n;
  if (ss.ep > 1) return "tep" + n;
  return "tp" + n;
}

namespace {

// What planning one entry needs besides the entry: the recipes, and the
// plan being built (entries are numbered by their place in it).
struct PlanContext {
  const RecipeIndex& index;
  const std::string& recipe_dir;
  int64_t max_array_size;
  SweepPlan& plan;
};

// The recipe that serves `e`'s config key; an error listing what is served.
Result<const Recipe*> RecipeFor(const PlanContext& ctx, const MatrixEntry& e) {
  const std::map<std::string, std::string>& by_key = ctx.index.by_key;
  auto r = by_key.find(e.config->key);
  if (r == by_key.end()) {
    std::string known;
    for (const auto& [k, v] : by_key) known += (known.empty() ? "" : ", ") + k + " (" + v + ")";
    return Error{"no recipe in " + ctx.recipe_dir + " serves config key '" + e.config->key +
                 "'; a recipe lists the keys it runs under 'serves:'. Served now: " +
                 (known.empty() ? std::string("(none)") : known)};
  }
  return &ctx.index.recipes.at(r->second);
}

// A row's place: "FILE:LINE:COL" of its search-space entry.
std::string RowFileLine(const MatrixEntry& e) {
  return e.config->file + ":" + std::to_string(e.ss->line) + ":" + std::to_string(e.ss->column);
}

// "config 'KEY' (FILE:LINE:COL, PATH)": the row an error is about.
std::string RowWhere(const MatrixEntry& e) {
  return "config '" + e.config->key + "' (" + RowFileLine(e) + ", " + e.ss->path + ")";
}

// Whether `recipe` renders `arm` at `conc`, with the row's KV offload tier
// and DRAM when it has one: a concurrency the recipe refuses (dep4 at an
// odd one) or a tier's bad template is found here, not an hour into the
// sweep.
Result<LaunchPlan> CheckRenders(const Recipe& recipe, const std::string& arm, int64_t conc, bool eval_only,
                                const MatrixEntry* e = nullptr) {
  RenderRequest req;
  req.arm = arm;
  req.conc = conc;
  req.eval_only = eval_only;
  if (e && e->ss->kv_offload_backend) {
    req.kv_offload = e->ss->kv_offload_backend->name;
    req.total_cpu_dram_gb = e->total_cpu_dram_gb;
  }
  return RenderDryRun(recipe, req);
}

// The step's host memory (every need of the plan: the Engram tables per DP
// rank, the tier's per GPU) against the runner's DRAM per node, for a row
// that sizes its tier from that DRAM: dram-utilization leaves no room for
// what the engine pins besides the tier, and the step would be refused on
// the node (or OOM) an hour into the sweep.
Status CheckHostDram(const MatrixEntry& e, const LaunchPlan& plan) {
  if (!e.hardware || plan.host_memory.empty()) return Ok{};
  uint64_t need = 0;
  std::string parts;
  for (const PlannedHostMemory& h : plan.host_memory) {
    need += h.total_bytes / static_cast<uint64_t>(std::max<int64_t>(plan.nodes, 1));
    parts += (parts.empty() ? "" : " + ") + h.name + " " + std::to_string(h.count) + " x " + FormatBytes(h.bytes_each) +
             " (per " + PerName(h.per) + ")";
  }
  const uint64_t have = static_cast<uint64_t>(e.hardware->available_cpu_dram_mib) * 1048576;
  if (need <= have) return Ok{};
  return Error{RowWhere(e) + ": the step's host memory " +
               parts + " = " + FormatBytes(need) + " per node does not fit runner '" + *e.runner + "' (hardware " +
               "available-cpu-dram-mib " + std::to_string(e.hardware->available_cpu_dram_mib) + " = " + FormatBytes(have) +
               "); the tier gets " + std::to_string(e.total_cpu_dram_gb) +
               " GB (TOTAL_CPU_DRAM_GB) from the row's dram-utilization: lower it, or use an arm with fewer ranks per node"};
}

// A row's kv-offload-backend must be a tier the recipe serves: a row the
// recipe would run without its offload tier measures something else.
Status CheckKvOffload(const MatrixEntry& e, const Recipe& recipe) {
  if (!e.ss->kv_offload_backend || recipe.FindKvOffload(e.ss->kv_offload_backend->name)) return Ok{};
  std::string allowed;
  for (const KvOffloadTier& t : recipe.kv_offload) allowed += (allowed.empty() ? "" : ", ") + t.name;
  return Error{RowWhere(e) + " field 'kv-offload-backend': '" +
               e.ss->kv_offload_backend->name + "' is not a KV offload tier recipe " + recipe.name +
               " serves; allowed: " + (allowed.empty() ? "none (it serves no offload tier)" : allowed)};
}

// `e` planned with `recipe` at concurrency `conc`: its arm, GPUs, nodes,
// image and model path; an arm the recipe lacks (or, for a single-node
// entry, one across nodes) or a concurrency it refuses is an error.
Status FillEntry(const MatrixEntry& e, int64_t conc, const Recipe& recipe, PlannedEntry& p) {
  p.config_key = e.config->key;
  p.recipe = recipe.name;
  p.arm = ArmFor(*e.ss);
  const Arm* arm = recipe.FindArm(p.arm);
  if (!arm) {
    return Error{"config '" + e.config->key + "' (" + e.config->Where() + ", " + e.ss->path + ") needs arm " +
                 p.arm + ", which recipe " + recipe.name + " does not have; arms: " + JoinNames(recipe.ArmNames())};
  }
  if (!e.multinode() && arm->nodes > 1) {
    return Error{"config '" + e.config->key + "' (" + e.config->Where() + ", " + e.ss->path + ") is single-node, but arm " +
                 p.arm + " of recipe " + recipe.name + " spans " + std::to_string(arm->nodes) + " nodes"};
  }
  if (Status s = CheckKvOffload(e, recipe); !s) return s;
  p.conc = conc;
  p.gpus = arm->gpus;
  p.nodes = arm->nodes;
  Result<LaunchPlan> plan = CheckRenders(recipe, p.arm, p.conc, e.eval_only, &e);
  if (!plan) {
    return Error{"config '" + e.config->key + "' (" + e.ss->path + ") at concurrency " + std::to_string(p.conc) +
                 ": " + plan.error().message};
  }
  if (Status s = CheckHostDram(e, plan.value()); !s) return s;
  p.eval_only = e.eval_only;
  p.image = e.config->image;
  // The checkpoint directory the engine reads inside the container: the
  // default mount for the model (docs/SWEEP.md).
  for (const RecipeVariable& v : recipe.variables) {
    if (v.name == "MODEL_PATH") p.model_path = e.eval_only && v.eval_only_value ? *v.eval_only_value : v.value;
  }
  if (arm->router && recipe.router) p.router_version = recipe.router->version;
  std::string json = MatrixToJson({e});
  p.entry_json = json.size() >= 2 ? json.substr(1, json.size() - 2) : json;  // [{...}] -> {...}
  return Ok{};
}

// One array task to be: a matrix entry at one of its concurrencies.
struct WorkItem {
  const MatrixEntry* e = nullptr;
  int64_t conc = 0;
};

// Plans `item` as the next entry of `job` and of the plan.
Status AddEntry(const PlanContext& ctx, const WorkItem& item, PlannedJob& job) {
  Result<const Recipe*> recipe = RecipeFor(ctx, *item.e);
  if (!recipe) return recipe.error();
  PlannedEntry p;
  p.index = static_cast<int64_t>(ctx.plan.entries.size());
  p.job_key = job.key;
  p.array_index = static_cast<int64_t>(job.entries.size());
  p.bucket = job.bucket;
  if (Status s = FillEntry(*item.e, item.conc, *recipe.value(), p); !s) return s;
  job.entries.push_back(p.index);
  job.gpus = std::max(job.gpus, p.gpus);
  job.nodes = std::max(job.nodes, p.nodes);
  ctx.plan.entries.push_back(std::move(p));
  return Ok{};
}

// A multinode entry's array tasks, one per concurrency (the step serves
// one concurrency: the plugin renders the engine for it, and the result is
// one per concurrency), or the entry in `skipped` with why it cannot run.
void AddMultinodeItems(const PlanContext& ctx, const MatrixEntry& e, std::vector<WorkItem>& items) {
  SkippedEntry skip{e.config->key,
                    RowFileLine(e),
                    e.ss->path, {}, ""};
  const auto skipped = [&](std::vector<int64_t> concs, std::string reason) {
    skip.concs = std::move(concs);
    skip.reason = std::move(reason);
    ctx.plan.skipped.push_back(skip);
  };
  Result<MultinodeShape> shape = AggregatedShape(*e.config, *e.ss);
  if (!shape) return skipped(e.concs, shape.error().message);
  auto r = ctx.index.by_key.find(e.config->key);
  if (r == ctx.index.by_key.end()) {
    return skipped(e.concs, "no recipe in " + ctx.recipe_dir + " serves config key '" + e.config->key + "' (needs arm " +
                                shape.value().arm + ", " + shape.value().Describe() + ")");
  }
  const Recipe& recipe = ctx.index.recipes.at(r->second);
  if (Status s = CheckMultinodeArm(shape.value(), recipe); !s) return skipped(e.concs, s.error().message);
  for (int64_t conc : e.concs) {
    if (Result<LaunchPlan> s = CheckRenders(recipe, shape.value().arm, conc, e.eval_only); !s) {
      skipped({conc}, "arm " + shape.value().arm + " of recipe " + recipe.name + " at concurrency " +
                          std::to_string(conc) + ": " + s.error().message);
      continue;
    }
    items.push_back({&e, conc});
  }
}

// One array per bucket, or several when the bucket has more entries than
// Slurm's MaxArraySize allows: bucket:NAME, bucket:NAME#2, ...
Status AddBucket(const PlanContext& ctx, const std::string& name, const std::vector<MatrixEntry>& entries,
                 const std::string& depends_on) {
  std::vector<WorkItem> items;
  for (const MatrixEntry& e : entries) {
    if (e.multinode()) {
      AddMultinodeItems(ctx, e, items);
    } else {
      items.push_back({&e, e.conc});
    }
  }
  const size_t most = static_cast<size_t>(ctx.max_array_size);
  for (size_t first = 0, part = 1; first < items.size(); first += most, ++part) {
    const std::string key = "bucket:" + name + (part > 1 ? "#" + std::to_string(part) : "");
    PlannedJob job{key, name, false, {}, 0, depends_on, 1};
    const size_t end = std::min(items.size(), first + most);
    for (size_t i = first; i < end; ++i) {
      if (Status s = AddEntry(ctx, items[i], job); !s) return s;
    }
    ctx.plan.jobs.push_back(std::move(job));
  }
  return Ok{};
}

}  // namespace

Result<SweepPlan> PlanSweep(SweepMode mode, const MatrixBuckets& buckets, const std::string& recipe_dir,
                            int64_t max_array_size) {
  if (max_array_size < 1) return Error{"the largest array must hold at least one task"};
  Result<RecipeIndex> index = IndexRecipes(recipe_dir);
  if (!index) return index.error();
  SweepPlan plan;
  plan.mode = mode;
  const PlanContext ctx{index.value(), recipe_dir, max_array_size, plan};

  MatrixBuckets rest = buckets;
  if (TraitsOf(mode).canary) {
    CanaryChoice c = ChooseCanary(buckets);
    rest = std::move(c.remaining);
    if (c.canary) {
      PlannedJob job{"canary", "canary", true, {}, 0, "", 1};
      if (Status s = AddEntry(ctx, {&*c.canary, c.canary->conc}, job); !s) return s.error();
      plan.jobs.push_back(std::move(job));
    }
  }
  const std::string depends_on = plan.jobs.empty() ? "" : "canary";
  for (const Bucket& b : rest.single_node) {
    if (Status s = AddBucket(ctx, b.name, b.entries, depends_on); !s) return s.error();
  }
  for (const Bucket& b : rest.multi_node) {
    if (Status s = AddBucket(ctx, "multinode-" + b.name, b.entries, depends_on); !s) return s.error();
  }
  const std::pair<const char*, const std::vector<MatrixEntry>*> evals[] = {
      {"evals", &rest.evals},
      {"agentic-evals", &rest.agentic_evals},
      {"multinode-evals", &rest.multinode_evals},
      {"multinode-agentic-evals", &rest.multinode_agentic_evals},
  };
  for (const auto& [name, entries] : evals) {
    if (Status s = AddBucket(ctx, name, *entries, depends_on); !s) return s.error();
  }
  if (plan.entries.empty()) {
    std::string why;
    for (const SkippedEntry& s : plan.skipped) why += "\n  skipped: " + s.Describe();
    return Error{"the selection has no entries to run" + (why.empty() ? std::string() : ":" + why)};
  }
  return plan;
}

}  // namespace ix
