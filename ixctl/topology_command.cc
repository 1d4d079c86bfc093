#include "ixctl/topology_command.h"

#include <boost/program_options.hpp>
#include <cstdlib>
#include <iostream>
#include <optional>

#include "core/recipe/launch_plan.h"
#include "core/node/placement.h"
#include "core/recipe/recipe.h"
#include "core/recipe/recipe_dir.h"
#include "core/node/topology.h"

namespace ix {
namespace po = boost::program_options;

namespace {

// The topology to show or plan on, and the live facts that go with it.
struct NodeView {
  Topology topology;
  std::optional<HostState> host;  // live only
};

// From --topology FILE, or this machine with free memory, host limits and
// the NVML cross-check.
Result<NodeView> LoadNode(const std::string& file) {
  NodeView view;
  if (!file.empty()) {
    Result<Topology> t = LoadTopologyXml(file);
    if (!t) return t.error();
    view.topology = std::move(t).value();
    return view;
  }
  Result<Topology> t = DiscoverTopology();
  if (!t) return t.error();
  view.topology = std::move(t).value();
  std::unique_ptr<HostProbe> probe = MakeSystemHostProbe();
  MeasureFreeMemory(view.topology, *probe);
  view.host = ReadHostState(*probe);
  const GpuOrderCheck check = CheckGpuOrder(view.topology, MakeSystemNvml()->List());
  view.topology.notes.push_back(std::string("NVML: ") + GpuOrderStateName(check.state) +
                                (check.message.empty() ? "" : ": " + check.message));
  if (!check.ok()) return Error{check.message};
  return view;
}

// Parses the options; returns an exit status when the command is done
// (help or misuse), nullopt to go on.
std::optional<int> Parse(const std::string& name, const char* usage,
                         const po::options_description& opts,
                         const std::vector<std::string>& args, po::variables_map& vm) {
  try {
    po::store(po::command_line_parser(args).options(opts).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "ixctl " << name << ": " << e.what() << "\nTry 'ixctl " << name << " --help'.\n";
    return 2;
  }
  if (vm.count("help")) {
    std::cout << usage << opts;
    return 0;
  }
  return std::nullopt;
}

const char kTopologyUsage[] =
    "Usage: ixctl topology [--topology FILE] [--json]\n"
    "\n"
    "Show what placement sees: NUMA nodes with memory (total and available)\n"
    "and CPUs, cores, NVIDIA GPUs in PCI bus order with their NUMA node, and,\n"
    "on the live machine, the CPUs this process may use, /dev/shm free space,\n"
    "RLIMIT_MEMLOCK and whether NVML confirms the GPU order.\n"
    "\n"
    "Options:\n";

const char kPlaceUsage[] =
    "Usage: ixctl place --recipe NAME --arm ARM --conc N [OPTIONS] [--json]\n"
    "\n"
    "Plan where each rank of a recipe arm runs on this node (or on the node an\n"
    "hwloc XML file describes): GPU, NUMA node, CPUs, host memory per NUMA node,\n"
    "/dev/shm and RLIMIT_MEMLOCK, and the verdict. Exit status 0 when the plan\n"
    "fits, 1 when it is refused (the reasons on stderr) or cannot be made.\n"
    "\n"
    "Options:\n";

}  // namespace

int RunTopologyCommand(const std::vector<std::string>& args) {
  std::string file;
  po::options_description opts;
  opts.add_options()
      ("topology", po::value(&file)->value_name("FILE"), "an hwloc XML file (lstopo --of xml) instead of this machine")
      ("json", po::bool_switch(), "print JSON")
      ("help,h", "show this help");
  po::variables_map vm;
  if (auto rc = Parse("topology", kTopologyUsage, opts, args, vm)) return *rc;
  Result<NodeView> node = LoadNode(file);
  if (!node) {
    std::cerr << "ixctl topology: " << node.error().message << "\n";
    return 1;
  }
  const HostState* host = node.value().host ? &*node.value().host : nullptr;
  if (vm["json"].as<bool>()) {
    std::cout << TopologyToJson(node.value().topology, host, true) << "\n";
  } else {
    std::cout << TopologySummary(node.value().topology, host);
  }
  return 0;
}

int RunPlaceCommand(const std::vector<std::string>& args) {
  std::string recipe_name, arm, recipe_dir, file, gpus;
  int64_t conc = 0;
  double safety = 1.0;
  std::vector<std::string> numa_free;
  const std::string recipe_dir_help =
      "recipe directory (default: $IX_RECIPE_DIR, else " + BuiltinRecipeDir() + ")";
  po::options_description opts;
  opts.add_options()
      ("recipe", po::value(&recipe_name)->value_name("NAME"), "recipe name")
      ("arm", po::value(&arm)->value_name("ARM"), "arm of the recipe (tp4, tep4, dep4, ...)")
      ("conc", po::value(&conc)->value_name("N"), "client concurrency")
      ("eval-only", po::bool_switch(), "the eval-only variant")
      ("recipe-dir", po::value(&recipe_dir)->value_name("DIR"), recipe_dir_help.c_str())
      ("topology", po::value(&file)->value_name("FILE"), "an hwloc XML file instead of this machine")
      ("gpus", po::value(&gpus)->value_name("LIST"), "node GPU indices of the step, e.g. 0,1,2,3 (default: $SLURM_STEP_GPUS, else $CUDA_VISIBLE_DEVICES, else all)")
      ("numa-free", po::value(&numa_free)->value_name("NODE=GiB")->composing(), "take NUMA node NODE to have this much available (repeatable; for checking a plan offline)")
      ("safety-factor", po::value(&safety)->value_name("F"), "multiply every host-memory need by F (default 1.0)")
      ("pinned", po::bool_switch(), "the engine pins its host memory: check RLIMIT_MEMLOCK")
      ("json", po::bool_switch(), "print JSON")
      ("help,h", "show this help");
  po::variables_map vm;
  if (auto rc = Parse("place", kPlaceUsage, opts, args, vm)) return *rc;
  for (const char* required : {"recipe", "arm", "conc"}) {
    if (!vm.count(required)) {
      std::cerr << "ixctl place: --" << required << " is required\nTry 'ixctl place --help'.\n";
      return 2;
    }
  }
  Result<Recipe> recipe = LoadRecipeByName(ResolveRecipeDir(recipe_dir), recipe_name);
  if (!recipe) {
    std::cerr << "ixctl place: " << recipe.error().message << "\n";
    return 1;
  }
  RenderRequest req;
  req.arm = arm;
  req.conc = conc;
  req.eval_only = vm["eval-only"].as<bool>();
  Result<LaunchPlan> plan = RenderDryRun(recipe.value(), req);
  if (!plan) {
    std::cerr << "ixctl place: " << plan.error().message << "\n";
    return 1;
  }
  Result<NodeView> node = LoadNode(file);
  if (!node) {
    std::cerr << "ixctl place: " << node.error().message << "\n";
    return 1;
  }
  Topology& topology = node.value().topology;
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
      std::cerr << "ixctl place: --numa-free: " << s.error().message << "\n";
      return 1;
    }
  }
  auto env = [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    return v ? std::optional<std::string>(v) : std::nullopt;
  };
  Result<StepGpus> step = vm.count("gpus") ? SelectStepGpus(topology, gpus, std::nullopt)
                                           : SelectStepGpus(topology, env("SLURM_STEP_GPUS"),
                                                            env("CUDA_VISIBLE_DEVICES"));
  if (!step) {
    std::cerr << "ixctl place: " << step.error().message << "\n";
    return 1;
  }
  PlacementRequest preq;
  preq.step_gpus = step.value().gpus;
  preq.safety_factor = safety;
  preq.pinned_memory = vm["pinned"].as<bool>();
  if (const auto& host = node.value().host) {
    preq.allowed_cpus = host->allowed_cpus;
    preq.shm_free_bytes = host->shm_free_bytes;
    preq.memlock = host->memlock;
  }
  Result<Placement> placement = PlanPlacement(plan.value(), topology, preq);
  if (!placement) {
    std::cerr << "ixctl place: " << placement.error().message << "\n";
    return 1;
  }
  if (vm["json"].as<bool>()) {
    std::cout << PlacementToJson(placement.value(), true) << "\n";
  } else {
    std::cout << PlacementSummary(placement.value());
  }
  for (const auto& p : placement.value().problems) std::cerr << "ixctl place: refused: " << p << "\n";
  return placement.value().fits ? 0 : 1;
}

}  // namespace ix
