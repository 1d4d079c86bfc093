#include "submitter/sweep/sweep_plan.h"

#include <algorithm>

#include "core/recipe/launch_plan.h"
#include "core/matrix/matrix_json.h"
#include "core/yaml/yaml_reader.h"

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

std::string ArmFor(const SearchSpaceEntry& ss) {
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
  if (e.multinode()) {
    return Error{"config '" + e.config->key + "' is multinode (" + e.config->Where() +
                 "); ixsubmit sweep runs single-node entries only"};
  }
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

// `e` planned with `recipe`: its arm, GPUs, image and model path; an arm
// the recipe lacks or a concurrency it refuses is an error.
Status FillEntry(const MatrixEntry& e, const Recipe& recipe, PlannedEntry& p) {
  p.config_key = e.config->key;
  p.recipe = recipe.name;
  p.arm = ArmFor(*e.ss);
  const Arm* arm = recipe.FindArm(p.arm);
  if (!arm) {
    return Error{"config '" + e.config->key + "' (" + e.config->Where() + ", " + e.ss->path + ") needs arm " +
                 p.arm + ", which recipe " + recipe.name + " does not have; arms: " + JoinNames(recipe.ArmNames())};
  }
  p.conc = e.conc;
  p.gpus = arm->gpus;
  // A concurrency the recipe refuses (dep4 at an odd one) fails here, not
  // an hour into the sweep.
  RenderRequest req;
  req.arm = p.arm;
  req.conc = p.conc;
  req.eval_only = e.eval_only;
  if (Result<LaunchPlan> rendered = RenderDryRun(recipe, req); !rendered) {
    return Error{"config '" + e.config->key + "' (" + e.ss->path + ") at concurrency " + std::to_string(p.conc) +
                 ": " + rendered.error().message};
  }
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

// Plans `e` as the next entry of `job` and of the plan.
Status AddEntry(const PlanContext& ctx, const MatrixEntry& e, PlannedJob& job) {
  Result<const Recipe*> recipe = RecipeFor(ctx, e);
  if (!recipe) return recipe.error();
  PlannedEntry p;
  p.index = static_cast<int64_t>(ctx.plan.entries.size());
  p.job_key = job.key;
  p.array_index = static_cast<int64_t>(job.entries.size());
  p.bucket = job.bucket;
  if (Status s = FillEntry(e, *recipe.value(), p); !s) return s;
  job.entries.push_back(p.index);
  job.gpus = std::max(job.gpus, p.gpus);
  ctx.plan.entries.push_back(std::move(p));
  return Ok{};
}

// One array per bucket, or several when the bucket has more entries than
// Slurm's MaxArraySize allows: bucket:NAME, bucket:NAME#2, ...
Status AddBucket(const PlanContext& ctx, const std::string& name, const std::vector<MatrixEntry>& entries,
                 const std::string& depends_on) {
  const size_t most = static_cast<size_t>(ctx.max_array_size);
  for (size_t first = 0, part = 1; first < entries.size(); first += most, ++part) {
    const std::string key = "bucket:" + name + (part > 1 ? "#" + std::to_string(part) : "");
    PlannedJob job{key, name, false, {}, 0, depends_on};
    const size_t end = std::min(entries.size(), first + most);
    for (size_t i = first; i < end; ++i) {
      if (Status s = AddEntry(ctx, entries[i], job); !s) return s;
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
      PlannedJob job{"canary", "canary", true, {}, 0, ""};
      if (Status s = AddEntry(ctx, *c.canary, job); !s) return s.error();
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
  if (plan.entries.empty()) return Error{"the selection has no entries to run"};
  return plan;
}

}  // namespace ix
