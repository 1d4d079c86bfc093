#include "submitter/sweep/entry_client.h"

#include "core/recipe/launch_plan.h"
#include "core/recipe/recipe.h"
#include "submitter/sweep/client_command.h"

namespace ix {
namespace {

// The recipe arm's client variables as a plan that is not running renders
// them (ports are stand-ins; the step exports the real ones).
Result<EnvVars> StepClientVariables(const SweepManifest& m, const PlannedEntry& e) {
  Result<Recipe> recipe = LoadRecipeByName(m.recipe_dir, e.recipe);
  if (!recipe) return recipe.error();
  RenderRequest req;
  req.arm = e.arm;
  req.conc = e.conc;
  req.eval_only = e.eval_only;
  req.head_addr = e.nodes > 1 ? "HEAD_ADDR" : "";
  Result<LaunchPlan> plan = RenderDryRun(recipe.value(), req);
  if (!plan) return plan.error();
  return EnvVars(plan.value().client_env.begin(), plan.value().client_env.end());
}

EnvVars Pairs(const std::vector<std::string>& env) {
  EnvVars out;
  for (const std::string& kv : env) {
    const size_t eq = kv.find('=');
    if (eq != std::string::npos && eq > 0) out.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
  }
  return out;
}

}  // namespace

Result<EntryClient> ResolveEntryClient(const SweepManifest& m, const PlannedEntry& e, const EnvVars& contract,
                                       const std::string& result_dir, const std::vector<std::string>& task_env) {
  EntryClient c;
  if (!m.client.empty()) {
    c.argv = m.client;
    c.sweeps_own = true;
    for (const std::string& a : m.client) c.description += (c.description.empty() ? "" : " ") + a;
    return c;
  }
  ClientEnvironment env;
  env.known = contract;  // the contract first: EnvValue takes the first of a name
  const EnvVars inherited = Pairs(task_env);
  env.known.insert(env.known.end(), inherited.begin(), inherited.end());
  Result<EnvVars> step = StepClientVariables(m, e);
  if (!step) return Error{"entry " + std::to_string(e.index) + ": " + step.error().message};
  env.step = step.value();
  Result<ClientWords> words = DefaultClientWords(env, result_dir, m.client_defaults);
  if (!words) return Error{"entry " + std::to_string(e.index) + ": " + words.error().message};
  const bool agentic = env.Get("SCENARIO_TYPE") == "agentic-coding";
  c.record = agentic ? result_dir + "/benchmark_command.txt" : "";
  c.argv = LauncherArgv(words.value(), c.record);
  c.description = DescribeClientWords(words.value());
  return c;
}

}  // namespace ix
