#include "ixctl/topology_command.h"

#include <boost/program_options.hpp>
#include <iostream>

#include "core/node/topology.h"
#include "ixctl/command_line.h"
#include "ixctl/node_view.h"

namespace ix {
namespace po = boost::program_options;

namespace {

const char kTopologyUsage[] =
    "Usage: ixctl topology [--topology FILE] [--json]\n"
    "\n"
    "Show what placement sees: NUMA nodes with memory (total and available)\n"
    "and CPUs, cores, NVIDIA GPUs in PCI bus order with their NUMA node, and,\n"
    "on the live machine, the CPUs this process may use, /dev/shm free space,\n"
    "RLIMIT_MEMLOCK and whether NVML confirms the GPU order.\n"
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
  if (auto rc = ParseCommandOptions("topology", kTopologyUsage, opts, args, vm)) return *rc;
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

}  // namespace ix
