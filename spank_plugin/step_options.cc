#include "spank_plugin/step_options.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <set>

#include "core/recipe/launch_plan.h"
#include "core/recipe/recipe.h"
#include "core/yaml/yaml_reader.h"

namespace ix {

namespace {

// A decimal integer in [1, max] (no sign, no spaces, no overflow), or an
// Error naming the option and the range.
Result<int64_t> ParseBounded(const std::string& option, const std::string& text, int64_t max, const char* unit) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  const bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
  if (!digits || *end != '\0' || errno != 0 || v < 1 || v > max) {
    return Error{option + "=" + text + ": expected " + unit + " from 1 to " + std::to_string(max)};
  }
  return static_cast<int64_t>(v);
}

// What a directory entry is, for a message.
const char* KindOf(mode_t mode) {
  return S_ISDIR(mode) ? "a directory" : S_ISFIFO(mode) ? "a FIFO" : S_ISCHR(mode) ? "a character device"
       : S_ISBLK(mode) ? "a block device" : S_ISSOCK(mode) ? "a socket" : "not a regular file";
}

// The recipe directory and NAME.yaml in it, looked at before the recipe is
// loaded: a directory that cannot be read, or a recipe that is not a
// regular file (a FIFO would block its reader), is said as such, naming it;
// otherwise the loader would only call the recipe unknown. A missing
// NAME.yaml is left to the loader, which lists the recipes there.
Status CheckRecipeFile(const std::string& dir, const std::string& name) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    return Error{"recipe_dir " + dir + " cannot be read: " + std::strerror(errno) +
                 " (plugstack.conf: recipe_dir=DIR)"};
  }
  if (name.empty() || name.find('/') != std::string::npos || name[0] == '.') {
    ::close(fd);
    return Ok{};  // not a recipe name: the loader refuses it
  }
  const std::string file = name + ".yaml";
  struct stat st{};
  const int r = ::fstatat(fd, file.c_str(), &st, 0);  // a linked recipe is fine: follow it
  const int err = errno;
  ::close(fd);
  if (r != 0) return err == ENOENT ? Status{Ok{}} : Status{Error{dir + "/" + file + ": " + std::strerror(err)}};
  if (!S_ISREG(st.st_mode)) return Error{dir + "/" + file + ": " + KindOf(st.st_mode) + ", not a regular file"};
  return Ok{};
}

}  // namespace

Result<int64_t> ParseConcurrency(const std::string& text) {
  return ParseBounded("--inferencex-conc", text, kMaxConcurrency, "a whole number");
}

Result<int64_t> ParseKvOffloadDramGb(const std::string& text) {
  return ParseBounded("--inferencex-kv-offload-dram-gb", text, kMaxKvOffloadDramGb, "a number of GB");
}

Result<int64_t> ParseHangAfter(const std::string& text) {
  if (text == "off") return int64_t{0};
  Result<int64_t> s = ParseBounded("--inferencex-hang-after", text, HangPolicy::kMaxHangAfterS, "a number of seconds");
  if (!s) return Error{s.error().message + ", or off"};
  return s;
}

Result<int64_t> ParseReadyTimeout(const std::string& text) {
  return ParseBounded("--inferencex-ready-timeout", text, kMaxReadyTimeoutS, "a number of seconds");
}

std::vector<std::string> KnownArms(const std::string& recipe_dir) {
  std::set<std::string> arms;
  for (const std::string& name : ListRecipes(recipe_dir)) {
    Result<Recipe> r = LoadRecipeByName(recipe_dir, name);
    if (!r) continue;  // a broken recipe is reported when it is asked for
    for (const std::string& a : r.value().ArmNames()) arms.insert(a);
  }
  return {arms.begin(), arms.end()};
}

Status ValidateStepOptions(const StepOptions& o, const std::string& recipe_dir) {
  if (!o.Active()) return Ok{};
  Result<Recipe> r = LoadCheckedRecipe(o, recipe_dir);
  if (!r) return r.error();
  return Ok{};
}

namespace {

// --inferencex-kv-offload names a tier of the recipe (or none), and its DRAM
// budget comes with a tier only.
Status CheckKvOffload(const StepOptions& o, const Recipe& recipe) {
  const std::string tier = o.kv_offload.value_or("none");
  if (tier != "none" && !recipe.FindKvOffload(tier)) {
    std::string allowed = "none";
    for (const KvOffloadTier& t : recipe.kv_offload) allowed += ", " + t.name;
    return Error{"--inferencex-kv-offload=" + tier + ": recipe " + recipe.name + " serves no such KV offload tier; "
                 "allowed: " + allowed};
  }
  if (tier == "none" && o.kv_offload_dram_gb) {
    return Error{"--inferencex-kv-offload-dram-gb is the budget of a KV offload tier: give --inferencex-kv-offload=TIER"};
  }
  return Ok{};
}

}  // namespace

Result<Recipe> LoadCheckedRecipe(const StepOptions& o, const std::string& recipe_dir) {
  if (!o.recipe) {
    if (o.arm) {
      const std::vector<std::string> arms = KnownArms(recipe_dir);
      if (std::find(arms.begin(), arms.end(), *o.arm) == arms.end()) {
        return Error{"--inferencex-arm=" + *o.arm + ": unknown arm; allowed: " +
                     (arms.empty() ? std::string("(no recipes in ") + recipe_dir + ")" : JoinNames(arms))};
      }
    }
    const std::vector<std::string> recipes = ListRecipes(recipe_dir);
    return Error{"--inferencex-recipe=NAME is required with the other --inferencex options; "
                 "recipes: " + (recipes.empty() ? std::string("(none in ") + recipe_dir + ")" : JoinNames(recipes))};
  }
  if (Status f = CheckRecipeFile(recipe_dir, *o.recipe); !f) {
    return Error{"--inferencex-recipe=" + *o.recipe + ": " + f.error().message};
  }
  Result<Recipe> recipe = LoadRecipeByName(recipe_dir, *o.recipe);
  if (!recipe) return Error{"--inferencex-recipe=" + *o.recipe + ": " + recipe.error().message};
  const std::string arms = JoinNames(recipe.value().ArmNames());
  if (!o.arm) return Error{"--inferencex-arm=ARM is required; arms of " + *o.recipe + ": " + arms};
  if (!recipe.value().FindArm(*o.arm)) {
    return Error{"--inferencex-arm=" + *o.arm + ": unknown arm for recipe " + *o.recipe +
                 "; allowed: " + arms};
  }
  if (!o.conc) return Error{"--inferencex-conc=N is required (the client concurrency)"};
  RenderRequest req;
  req.arm = *o.arm;
  req.conc = *o.conc;
  req.eval_only = o.eval_only;
  if (o.placement && *o.placement != "strict" && *o.placement != "warn") {
    return Error{"--inferencex-placement=" + *o.placement + ": allowed: strict, warn"};
  }
  if (Status k = CheckKvOffload(o, recipe.value()); !k) return k.error();
  req.kv_offload = o.kv_offload.value_or("");
  req.total_cpu_dram_gb = o.kv_offload_dram_gb.value_or(0);
  if (o.hang_after_s) req.hang_after_s = static_cast<double>(*o.hang_after_s);
  Result<LaunchPlan> plan = RenderDryRun(recipe.value(), req);
  if (!plan) return plan.error();
  return recipe;
}

}  // namespace ix
