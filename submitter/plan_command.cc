#include "submitter/plan_command.h"

#include <boost/program_options.hpp>

#include <iostream>

#include "core/recipe/launch_plan.h"
#include "core/recipe/recipe.h"
#include "core/recipe/recipe_dir.h"

namespace ix {
namespace po = boost::program_options;

namespace {

const char kUsage[] =
    "Usage: ixsubmit plan --recipe NAME --arm ARM --conc N [OPTIONS]\n"
    "\n"
    "Render one arm of a recipe at one concurrency into the launch plan a job\n"
    "step would run: exact argv and environment of every process, named ports,\n"
    "ranks and GPUs, readiness checks, host memory and the client environment.\n"
    "Nothing is started; ports are distinct placeholders (a running step leases\n"
    "real ones). An arm across nodes has one plan per node: --node K shows node\n"
    "K's (0, the head, by default), with the head's address HEAD_ADDR unless\n"
    "--head-addr gives one. --kv-offload adds a KV offload tier (its files, its\n"
    "servers started before the engine, its engine args, env and host memory),\n"
    "sized by --total-cpu-dram-gb; the result directory is the placeholder RESULT_DIR.\n"
    "\n"
    "Options:\n";

}  // namespace

int RunPlanCommand(const std::vector<std::string>& args) {
  std::string recipe_name, arm, recipe_dir, head_addr, kv_offload;
  int64_t conc = 0, node = 0, total_cpu_dram_gb = 0;
  std::vector<std::string> sets;
  const std::string recipe_dir_help =
      "recipe directory (default: $IX_RECIPE_DIR, else " + BuiltinRecipeDir() + ")";
  po::options_description opts;
  opts.add_options()
      ("recipe", po::value(&recipe_name)->value_name("NAME"), "recipe name (a file NAME.yaml in the recipe directory)")
      ("arm", po::value(&arm)->value_name("ARM"), "arm of the recipe: tp4, tep4, dep4, ...")
      ("conc", po::value(&conc)->value_name("N"), "client concurrency, a positive integer")
      ("node", po::value(&node)->value_name("K"), "arms across nodes: the plan of node K, 0 (the head) to nodes - 1; default 0")
      ("head-addr", po::value(&head_addr)->value_name("ADDR"), "arms across nodes: the head's address (default: the placeholder HEAD_ADDR)")
      ("eval-only", po::bool_switch(), "render the eval-only variant (accuracy run)")
      ("kv-offload", po::value(&kv_offload)->value_name("TIER"), "KV offload tier the recipe serves (none, vllm-simple, mooncake, ...); default none")
      ("total-cpu-dram-gb", po::value(&total_cpu_dram_gb)->value_name("N"), "host DRAM budget of the step in GB (InferenceX's TOTAL_CPU_DRAM_GB), for the tier")
      ("set", po::value(&sets)->value_name("NAME=VALUE")->composing(), "override a recipe variable; repeatable")
      ("recipe-dir", po::value(&recipe_dir)->value_name("DIR"), recipe_dir_help.c_str())
      ("json", po::bool_switch(), "print the plan as JSON")
      ("help,h", "show this help");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(opts).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "ixsubmit plan: " << e.what() << "\nTry 'ixsubmit plan --help'.\n";
    return 2;
  }
  if (vm.count("help")) {
    std::cout << kUsage << opts;
    return 0;
  }
  for (const char* required : {"recipe", "arm", "conc"}) {
    if (!vm.count(required)) {
      std::cerr << "ixsubmit plan: --" << required << " is required\nTry 'ixsubmit plan --help'.\n";
      return 2;
    }
  }
  if (conc <= 0) {
    std::cerr << "ixsubmit plan: --conc must be a positive integer, got " << conc << "\n";
    return 2;
  }
  RenderRequest req;
  req.arm = arm;
  req.conc = conc;
  req.eval_only = vm["eval-only"].as<bool>();
  req.node_rank = node;
  req.head_addr = head_addr;
  req.kv_offload = kv_offload;
  req.total_cpu_dram_gb = total_cpu_dram_gb;
  for (const std::string& s : sets) {
    const size_t eq = s.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::cerr << "ixsubmit plan: --set expects NAME=VALUE, got '" << s << "'\n";
      return 2;
    }
    req.overrides.emplace_back(s.substr(0, eq), s.substr(eq + 1));
  }

  Result<Recipe> recipe = LoadRecipeByName(ResolveRecipeDir(recipe_dir), recipe_name);
  if (!recipe) {
    std::cerr << "ixsubmit plan: " << recipe.error().message << "\n";
    return 1;
  }
  if (const Arm* a = recipe.value().FindArm(arm); a && (node < 0 || node >= a->nodes)) {
    std::cerr << "ixsubmit plan: --node " << node << " is outside 0.." << a->nodes - 1 << ": arm " << arm << " runs on "
              << a->nodes << (a->nodes == 1 ? " node" : " nodes") << "\n";
    return 2;
  }
  Result<LaunchPlan> plan = RenderDryRun(recipe.value(), req);
  if (!plan) {
    std::cerr << "ixsubmit plan: " << plan.error().message << "\n";
    return 1;
  }
  if (vm["json"].as<bool>()) {
    std::cout << PlanToJson(plan.value(), true) << "\n";
  } else {
    std::cout << PlanSummary(plan.value());
  }
  return 0;
}

}  // namespace ix
