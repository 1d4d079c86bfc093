#include "ixctl/place_command.h"

#include <boost/program_options.hpp>
#include <cstdlib>
#include <iostream>
#include <optional>

#include "core/node/placement.h"
#include "core/node/topology.h"
#include "core/recipe/launch_plan.h"
#include "core/recipe/recipe.h"
#include "core/recipe/recipe_dir.h"
#include "ixctl/command_line.h"
#include "ixctl/node_view.h"

namespace ix {
namespace po = boost::program_options;

namespace {

const char kPlaceUsage[] =
    "Usage: ixctl place --recipe NAME --arm ARM --conc N [OPTIONS] [--json]\n"
    "\n"
    "Plan where each rank of a recipe arm runs on this node (or on the node an\n"
    "hwloc XML file describes): GPU, NUMA node, CPUs, host memory per NUMA node,\n"
    "/dev/shm and RLIMIT_MEMLOCK, and the verdict. Exit status 0 when the plan\n"
    "fits, 1 when it is refused (the reasons on stderr) or cannot be made. For\n"
    "an arm across nodes, --node K places node K's ranks (the head's, 0, by\n"
    "default): each node of the step holds its own share.\n"
    "\n"
    "Options:\n";

// The command line of `ixctl place`: what to render (the options are the
// request's fields) and how to check it. Invariant, once parsed: recipe,
// arm and conc were given.
struct PlaceArgs {
  std::string recipe_name, recipe_dir, file;
  RenderRequest req;
  std::optional<std::string> gpus;  // --gpus; unset: the step's from the environment
  double safety = 1.0;
  std::vector<std::string> numa_free;
  bool pinned = false, json = false;
};

int Failed(const std::string& message) {
  std::cerr << "ixctl place: " << message << "\n";
  return 1;
}

// Parses the options; the exit status when the command is done (help or
// misuse), nullopt to go on.
std::optional<int> ParsePlaceArgs(const std::vector<std::string>& args, PlaceArgs& a) {
  std::string gpus;
  const std::string recipe_dir_help =
      "recipe directory (default: $IX_RECIPE_DIR, else " + BuiltinRecipeDir() + ")";
  po::options_description opts;
  opts.add_options()
      ("recipe", po::value(&a.recipe_name)->value_name("NAME"), "recipe name")
      ("arm", po::value(&a.req.arm)->value_name("ARM"), "arm of the recipe (tp4, tep4, dep4, ...)")
      ("conc", po::value(&a.req.conc)->value_name("N"), "client concurrency")
      ("node", po::value(&a.req.node_rank)->value_name("K"), "arms across nodes: place node K's ranks, 0 (the head) to nodes - 1; default 0")
      ("eval-only", po::bool_switch(&a.req.eval_only), "the eval-only variant")
      ("kv-offload", po::value(&a.req.kv_offload)->value_name("TIER"), "KV offload tier (none, vllm-simple, mooncake, ...): its host memory counts too")
      ("total-cpu-dram-gb", po::value(&a.req.total_cpu_dram_gb)->value_name("N"), "host DRAM budget in GB (TOTAL_CPU_DRAM_GB) that sizes the tier")
      ("recipe-dir", po::value(&a.recipe_dir)->value_name("DIR"), recipe_dir_help.c_str())
      ("topology", po::value(&a.file)->value_name("FILE"), "an hwloc XML file instead of this machine")
      ("gpus", po::value(&gpus)->value_name("LIST"), "node GPU indices of the step, e.g. 0,1,2,3 (default: $SLURM_STEP_GPUS, else $CUDA_VISIBLE_DEVICES, else all)")
      ("numa-free", po::value(&a.numa_free)->value_name("NODE=GiB")->composing(), "take NUMA node NODE to have this much available (repeatable; for checking a plan offline)")
      ("safety-factor", po::value(&a.safety)->value_name("F"), "multiply every host-memory need by F (default 1.0)")
      ("pinned", po::bool_switch(&a.pinned), "the engine pins its host memory: check RLIMIT_MEMLOCK")
      ("json", po::bool_switch(&a.json), "print JSON")
      ("help,h", "show this help");
  po::variables_map vm;
  if (auto rc = ParseCommandOptions("place", kPlaceUsage, opts, args, vm)) return rc;
  for (const char* required : {"recipe", "arm", "conc"}) {
    if (!vm.count(required)) {
      std::cerr << "ixctl place: --" << required << " is required\nTry 'ixctl place --help'.\n";
      return 2;
    }
  }
  if (vm.count("gpus")) a.gpus = gpus;
  return std::nullopt;
}

// The launch plan of the recipe arm, as `ixsubmit plan` renders it.
Result<LaunchPlan> RenderArm(const PlaceArgs& a) {
  Result<Recipe> recipe = LoadRecipeByName(ResolveRecipeDir(a.recipe_dir), a.recipe_name);
  if (!recipe) return recipe.error();
  const RenderRequest& req = a.req;
  if (const Arm* arm = recipe.value().FindArm(req.arm); arm && (req.node_rank < 0 || req.node_rank >= arm->nodes)) {
    return Error{"--node " + std::to_string(req.node_rank) + " is outside 0.." + std::to_string(arm->nodes - 1) +
                 ": arm " + req.arm + " runs on " + std::to_string(arm->nodes) + (arm->nodes == 1 ? " node" : " nodes")};
  }
  return RenderDryRun(recipe.value(), req);
}

// --numa-free NODE=GiB...: what each NUMA node is taken to have available.
// The exit status on a bad value (2 malformed, 1 no such node), nullopt when
// all are set.
std::optional<int> ApplyNumaFree(Topology& topology, const std::vector<std::string>& numa_free) {
  for (const std::string& nf : numa_free) {
    const size_t eq = nf.find('=');
    char* end = nullptr;
    const double gib = eq == std::string::npos ? -1 : std::strtod(nf.c_str() + eq + 1, &end);
    int n = -1;
    try {
      n = std::stoi(nf.substr(0, eq));
    } catch (const std::exception&) {
    }
    if (eq == std::string::npos || n < 0 || gib < 0 || (end && *end)) {
      std::cerr << "ixctl place: --numa-free expects NODE=GiB (e.g. 0=610), got '" << nf << "'\n";
      return 2;
    }
    if (Status s = SetNumaFreeBytes(topology, n, static_cast<uint64_t>(gib * 1073741824.0)); !s) {
      return Failed("--numa-free: " + s.error().message);
    }
  }
  return std::nullopt;
}

std::optional<std::string> Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::optional<std::string>(v) : std::nullopt;
}

// What placement is asked: the step's GPUs (--gpus, else Slurm's, else
// CUDA_VISIBLE_DEVICES, else all) and, on the live machine, its host limits.
Result<PlacementRequest> RequestFor(const PlaceArgs& a, const NodeView& node) {
  Result<StepGpus> step = a.gpus ? SelectStepGpus(node.topology, *a.gpus, std::nullopt)
                                 : SelectStepGpus(node.topology, Env("SLURM_STEP_GPUS"), Env("CUDA_VISIBLE_DEVICES"));
  if (!step) return step.error();
  PlacementRequest req;
  req.step_gpus = step.value().gpus;
  req.safety_factor = a.safety;
  req.pinned_memory = a.pinned;
  if (node.host) {
    req.allowed_cpus = node.host->allowed_cpus;
    req.shm_free_bytes = node.host->shm_free_bytes;
    req.memlock = node.host->memlock;
  }
  return req;
}

}  // namespace

int RunPlaceCommand(const std::vector<std::string>& args) {
  PlaceArgs a;
  if (auto rc = ParsePlaceArgs(args, a)) return *rc;
  Result<LaunchPlan> plan = RenderArm(a);
  if (!plan) return Failed(plan.error().message);
  Result<NodeView> node = LoadNode(a.file);
  if (!node) return Failed(node.error().message);
  if (auto rc = ApplyNumaFree(node.value().topology, a.numa_free)) return *rc;
  Result<PlacementRequest> req = RequestFor(a, node.value());
  if (!req) return Failed(req.error().message);
  Result<Placement> placement = PlanPlacement(plan.value(), node.value().topology, req.value());
  if (!placement) return Failed(placement.error().message);
  if (a.json) {
    std::cout << PlacementToJson(placement.value(), true) << "\n";
  } else {
    std::cout << PlacementSummary(placement.value());
  }
  for (const auto& p : placement.value().problems) std::cerr << "ixctl place: refused: " << p << "\n";
  return placement.value().fits ? 0 : 1;
}

}  // namespace ix
