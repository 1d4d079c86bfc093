// StepOptions: the --inferencex-* options of one srun/sbatch, as given, and
// their validation against the recipes. Pure logic, no Slurm calls, so it is
// tested without a cluster. Invariant: `Active()` is false exactly when no
// --inferencex-* option was given, and then nothing else is consulted.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/recipe/recipe.h"
#include "core/base/result.h"

namespace ix {

struct StepOptions {
  std::optional<std::string> arm;
  std::optional<std::string> recipe;
  std::optional<int64_t> conc;
  bool eval_only = false;
  std::optional<int64_t> ready_timeout_s;  // default: 3600
  std::optional<std::string> placement;    // strict (default) | warn
  std::optional<std::string> kv_offload;   // a KV offload tier of the recipe, or none (the default)
  std::optional<int64_t> kv_offload_dram_gb;  // the tier's host DRAM for the step (InferenceX's TOTAL_CPU_DRAM_GB)
  std::optional<int64_t> hang_after_s;        // 0: off; unset: the recipe's hang.after

  bool Active() const {
    return arm || recipe || conc || eval_only || ready_timeout_s || placement || kv_offload || kv_offload_dram_gb ||
           hang_after_s;
  }
};

// The allowed ranges: a value outside is refused in srun, naming the option.
constexpr int64_t kMaxConcurrency = 1'000'000;
constexpr int64_t kMaxReadyTimeoutS = 7 * 24 * 3600;  // 7 days
constexpr int64_t kMaxKvOffloadDramGb = 1'000'000;    // 1 PB: far beyond a node

// Parses the value of --inferencex-conc: 1..kMaxConcurrency.
Result<int64_t> ParseConcurrency(const std::string& text);
// Parses the value of --inferencex-ready-timeout: 1..kMaxReadyTimeoutS seconds.
Result<int64_t> ParseReadyTimeout(const std::string& text);
// Parses the value of --inferencex-hang-after: 1..HangPolicy::kMaxHangAfterS
// seconds, or "off" (0).
Result<int64_t> ParseHangAfter(const std::string& text);
// Parses the value of --inferencex-kv-offload-dram-gb: 1..kMaxKvOffloadDramGb GB.
Result<int64_t> ParseKvOffloadDramGb(const std::string& text);

// The arms every recipe in `recipe_dir` offers, sorted and unique.
std::vector<std::string> KnownArms(const std::string& recipe_dir);

// Checks a set of options before anything is allocated: the recipe exists,
// the arm is one of its arms, the concurrency renders (e.g. dep4 needs
// 2 x CONC divisible by 4), the KV offload tier is one the recipe serves
// and has the DRAM budget it needs. The message says what is allowed.
Status ValidateStepOptions(const StepOptions& options, const std::string& recipe_dir);
// The same checks, returning the recipe they loaded (slurmstepd plans from
// it instead of parsing the file again). `options` must be Active().
Result<Recipe> LoadCheckedRecipe(const StepOptions& options, const std::string& recipe_dir);

}  // namespace ix
