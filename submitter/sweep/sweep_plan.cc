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

Result<SweepPlan> PlanSweep(SweepMode mode, const MatrixBuckets& buckets, const std::string& recipe_dir,
                            int64_t max_array_size) {
  if (max_array_size < 1) return Error{"the largest array must hold at least one task"};
  Result<RecipeIndex> index = IndexRecipes(recipe_dir);
  if (!index) return index.error();
  const std::map<std::string, std::string>& by_key = index.value().by_key;
  SweepPlan plan;
  plan.mode = mode;
  const SweepModeTraits traits = TraitsOf(mode);

  auto add = [&](const MatrixEntry& e, PlannedJob& job) -> Status {
    if (e.multinode()) {
      return Error{"config '" + e.config->key + "' is multinode (" + e.config->Where() +
                   "); ixsubmit sweep runs single-node entries only"};
    }
    auto r = by_key.find(e.config->key);
    if (r == by_key.end()) {
      std::string known;
      for (const auto& [k, v] : by_key) known += (known.empty() ? "" : ", ") + k + " (" + v + ")";
      return Error{"no recipe in " + recipe_dir + " serves config key '" + e.config->key +
                   "'; a recipe lists the keys it runs under 'serves:'. Served now: " +
                   (known.empty() ? std::string("(none)") : known)};
    }
    const Recipe& recipe = index.value().recipes.at(r->second);
    PlannedEntry p;
    p.index = static_cast<int64_t>(plan.entries.size());
    p.job_key = job.key;
    p.array_index = static_cast<int64_t>(job.entries.size());
    p.bucket = job.bucket;
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
    std::string json = MatrixToJson({e});
    p.entry_json = json.size() >= 2 ? json.substr(1, json.size() - 2) : json;  // [{...}] -> {...}
    job.entries.push_back(p.index);
    job.gpus = std::max(job.gpus, p.gpus);
    plan.entries.push_back(std::move(p));
    return Ok{};
  };

  MatrixBuckets rest = buckets;
  if (traits.canary) {
    CanaryChoice c = ChooseCanary(buckets);
    rest = std::move(c.remaining);
    if (c.canary) {
      PlannedJob job{"canary", "canary", true, {}, 0, ""};
      if (Status s = add(*c.canary, job); !s) return s.error();
      plan.jobs.push_back(std::move(job));
    }
  }
  const bool has_canary = !plan.jobs.empty();
  // One array per bucket, or several when the bucket has more entries than
  // Slurm's MaxArraySize allows: bucket:NAME, bucket:NAME#2, ...
  auto add_bucket = [&](const std::string& name, const std::vector<MatrixEntry>& entries) -> Status {
    for (size_t first = 0, part = 1; first < entries.size(); first += static_cast<size_t>(max_array_size), ++part) {
      const std::string key = "bucket:" + name + (part > 1 ? "#" + std::to_string(part) : "");
      PlannedJob job{key, name, false, {}, 0, has_canary ? "canary" : ""};
      const size_t end = std::min(entries.size(), first + static_cast<size_t>(max_array_size));
      for (size_t i = first; i < end; ++i) {
        if (Status s = add(entries[i], job); !s) return s;
      }
      plan.jobs.push_back(std::move(job));
    }
    return Ok{};
  };
  for (const Bucket& b : rest.single_node) {
    if (Status s = add_bucket(b.name, b.entries); !s) return s.error();
  }
  for (const Bucket& b : rest.multi_node) {
    if (Status s = add_bucket("multinode-" + b.name, b.entries); !s) return s.error();
  }
  if (Status s = add_bucket("evals", rest.evals); !s) return s.error();
  if (Status s = add_bucket("agentic-evals", rest.agentic_evals); !s) return s.error();
  if (Status s = add_bucket("multinode-evals", rest.multinode_evals); !s) return s.error();
  if (Status s = add_bucket("multinode-agentic-evals", rest.multinode_agentic_evals); !s) return s.error();
  if (plan.entries.empty()) return Error{"the selection has no entries to run"};
  return plan;
}

}  // namespace ix
