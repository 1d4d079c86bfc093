// ixctl: the node-side admin tool. Routes each subcommand to its file.
#include <iostream>
#include <string>
#include <vector>

#include "ixctl/ports_command.h"
#include "ixctl/topology_command.h"

namespace {

const char kUsage[] =
    "Usage: ixctl COMMAND [OPTIONS]\n"
    "\n"
    "Inspect and drive the inferencex-slurm machinery of this node.\n"
    "\n"
    "Commands:\n"
    "  ports      lease, release and list ports of the node's port broker\n"
    "  topology   show NUMA nodes, cores, GPUs and host limits placement sees\n"
    "  place      plan where a recipe arm's ranks run, and whether they fit\n"
    "\n"
    "Run 'ixctl COMMAND --help' for the options of a command.\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << kUsage;
    return 2;
  }
  const std::string command = argv[1];
  const std::vector<std::string> rest(argv + 2, argv + argc);
  if (command == "--help" || command == "-h" || command == "help") {
    std::cout << kUsage;
    return 0;
  }
  if (command == "ports") return ix::RunPortsCommand(rest);
  if (command == "topology") return ix::RunTopologyCommand(rest);
  if (command == "place") return ix::RunPlaceCommand(rest);
  std::cerr << "ixctl: unknown command '" << command << "'; commands: ports, topology, place\nTry 'ixctl --help'.\n";
  return 2;
}
