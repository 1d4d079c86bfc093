#include "spank_plugin/step_setup.h"

#include <algorithm>
#include <set>

#include "core/topology.h"

namespace ix {

Result<std::vector<std::pair<std::string, BindingTarget>>> BindingsFor(const LaunchPlan& plan,
                                                                       const Placement& placement) {
  std::vector<std::pair<std::string, BindingTarget>> out;
  if (placement.ranks.empty()) return out;
  std::set<int> nodes;
  std::vector<int> cpus;
  for (const RankPlacement& r : placement.ranks) {
    nodes.insert(r.numa);
    cpus.insert(cpus.end(), r.cpus.begin(), r.cpus.end());
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  if (nodes.size() > 1) {
    std::vector<int> v(nodes.begin(), nodes.end());
    return Error{plan.arm + ": the ranks of the single engine process span NUMA nodes " +
                 FormatIdList(v) + " and the recipe declares no per-worker NUMA binding; "
                 "give the step GPUs of one NUMA node or use --inferencex-placement=warn"};
  }
  for (const PlannedProcess& p : plan.processes) {
    BindingTarget t;
    t.numa = *nodes.begin();
    t.cpus = p.name == "engine" ? cpus : placement.ranks[0].cpus;
    out.emplace_back(p.name, t);
  }
  return out;
}

std::vector<std::string> StepdArgv(const std::string& stepd_path, const StepSetup& s, int ready_fd,
                                   pid_t client_pid) {
  std::vector<std::string> a = {stepd_path,
                                "--recipe-dir", s.recipe_dir,
                                "--recipe", s.recipe,
                                "--arm", s.request.arm,
                                "--conc", std::to_string(s.request.conc),
                                "--run-dir", s.run_dir,
                                "--result-dir", s.result_dir,
                                "--ready-timeout", std::to_string(s.ready_timeout_s),
                                "--ready-fd", std::to_string(ready_fd),
                                "--client-pid", std::to_string(client_pid)};
  if (s.request.eval_only) a.push_back("--eval-only");
  for (const auto& [k, v] : s.request.overrides) a.insert(a.end(), {"--set", k + "=" + v});
  for (const auto& [k, v] : s.request.ports) a.insert(a.end(), {"--port", k + "=" + std::to_string(v)});
  for (const auto& [name, t] : s.bindings) {
    if (t.cpus.empty()) continue;
    std::string b = name + "=" + FormatIdList(t.cpus);
    if (t.numa) b += "@" + std::to_string(*t.numa);
    a.insert(a.end(), {"--bind", b});
  }
  return a;
}

EnvList TaskEnvironment(const StepSetup& s) {
  EnvList env;
  int public_port = 0;
  for (const auto& [k, v] : s.plan.ports) {
    if (k == "PORT") public_port = v;
  }
  if (public_port == 0 && !s.plan.ports.empty()) public_port = s.plan.ports[0].second;
  env.emplace_back("IX_ENDPOINT", "http://localhost:" + std::to_string(public_port));
  env.emplace_back("IX_PORT", std::to_string(public_port));
  for (const auto& [k, v] : s.plan.ports) env.emplace_back("IX_PORT_" + k, std::to_string(v));
  env.emplace_back("IX_RUN_DIR", s.run_dir);
  env.emplace_back("IX_RESULT_DIR", s.result_dir);
  env.emplace_back("IX_RECIPE", s.plan.recipe);
  env.emplace_back("IX_ARM", s.plan.arm);
  env.emplace_back("IX_CONC", std::to_string(s.plan.conc));
  env.insert(env.end(), s.plan.client_env.begin(), s.plan.client_env.end());
  return env;
}

}  // namespace ix
