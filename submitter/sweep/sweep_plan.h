// SweepPlan: what one `ixsubmit sweep` submits, decided before anything is
// submitted: the canary (where the mode has one) and one sbatch array per
// non-empty bucket, each entry with its recipe, arm and concurrency. Pure:
// made from the bucketed matrix and the recipes, so it is tested without
// Slurm.
//
// Invariants: entry indices are 0..N-1 in submission order (canary first,
// then buckets in order); each array's entries have array indices
// 0..size-1; every entry has a recipe that serves its config key and an arm
// that recipe has; a multinode matrix entry is one planned entry per
// concurrency, on an arm across nodes (nodes > 1), in an array of its own
// (multinode buckets never hold single-node entries); what cannot run is in
// `skipped`, never in `entries`.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/matrix/matrix.h"
#include "core/matrix/matrix_buckets.h"
#include "core/recipe/recipe.h"
#include "core/base/result.h"
#include "submitter/sweep/sweep_mode.h"

namespace ix {

// One matrix entry as the sweep runs it: where it sits (its job and array
// index) and what its step needs (recipe, arm, concurrency, image, model).
struct PlannedEntry {
  int64_t index = 0;
  std::string job_key;  // "canary" or "bucket:NAME"
  int64_t array_index = 0;
  std::string bucket;   // "1k1k", "agentic", ... ("canary" for the canary)
  std::string config_key;
  std::string recipe, arm;
  int64_t conc = 0;
  int64_t gpus = 0;   // per node (the arm's)
  int64_t nodes = 1;  // the arm's; > 1: one step across nodes (srun -N)
  bool eval_only = false;
  std::string image;       // the config row's `image`
  std::string model_path;  // the recipe's MODEL_PATH (eval-only value for eval entries); "" = none
  std::string router_version;  // the recipe router's declared version (ROUTER_METADATA); "" = no router or none declared
  std::string entry_json;  // the matrix entry, as `ixsubmit matrix` prints it
};

// One sbatch submission: the canary or one array of a bucket.
struct PlannedJob {
  std::string key;        // "canary", "bucket:1k1k", "bucket:1k1k#2"
  std::string bucket;
  bool canary = false;
  std::vector<int64_t> entries;  // indices, in array order
  int64_t gpus = 0;              // per node: the largest of its entries' (one allocation shape per array)
  std::string depends_on;        // "canary" or ""
  int64_t nodes = 1;             // the largest of its entries' (sbatch -N)
};

// A multinode matrix entry (or one of its concurrencies) the sweep does not
// run, and why: disaggregated, no recipe serves its key, no arm across
// nodes has its shape, the recipe refuses the concurrency. Listed by
// --dry-run, kept in sweep.json; never submitted.
struct SkippedEntry {
  std::string config_key;
  std::string where;  // "file:line:col" of the search-space row
  std::string path;   // "scenarios.fixed-seq-len[0].search-space[1]"
  std::vector<int64_t> concs;
  std::string reason;

  std::string Describe() const;  // "KEY (WHERE, PATH) conc [..]: REASON"
};

// The whole plan (invariants at the top of this file).
struct SweepPlan {
  SweepMode mode = SweepMode::kFullSweepEnabled;
  std::vector<PlannedEntry> entries;
  std::vector<PlannedJob> jobs;  // canary first
  std::vector<SkippedEntry> skipped;
};

// Every recipe of a directory, loaded once, and which one serves each
// config key (their `serves` lists). A key served by two recipes is an
// error naming both.
struct RecipeIndex {
  std::map<std::string, Recipe> recipes;         // by name
  std::map<std::string, std::string> by_key;     // config key -> recipe name
};
Result<RecipeIndex> IndexRecipes(const std::string& recipe_dir);

// The arm name InferenceX's parallelism fields mean. Single-node rows:
// dp-attn -> depN, ep > 1 -> tepN, else tpN (N = tp). Multinode rows (their
// prefill worker; MultinodeArmName): dp-attn -> depE (E = ep), else tpN or
// tepN, + ppP when pp > 1 ("dep16", "tp8pp2").
std::string ArmFor(const SearchSpaceEntry& ss);

// The plan for `mode` over `buckets` (made with the mode's trim_conc); a
// bucket larger than `max_array_size` (Slurm's MaxArraySize) becomes
// several arrays, bucket:NAME, bucket:NAME#2, ..., which fail fast together.
// Multinode entries run one planned entry per concurrency on the arm of
// their shape (multinode_arm.h); those that cannot run (disaggregated, no
// recipe, no such arm across nodes, a refused concurrency) are `skipped`.
// Errors: for a single-node entry, a config key no recipe serves, an arm
// the recipe lacks or that spans nodes, a concurrency the recipe refuses;
// nothing left to run (naming what was skipped).
Result<SweepPlan> PlanSweep(SweepMode mode, const MatrixBuckets& buckets, const std::string& recipe_dir,
                            int64_t max_array_size = 1001);

// The bucket a job key names: "bucket:1k1k#2" -> "1k1k"; "canary" -> "canary".
std::string BucketOfJobKey(const std::string& key);

}  // namespace ix
