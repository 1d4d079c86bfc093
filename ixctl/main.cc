// ixctl: the node-side admin tool. Routes each subcommand to its file.
#include <iostream>
#include <string>
#include <vector>

#include "core/base/subcommand.h"
#include "ixctl/place_command.h"
#include "ixctl/ports_command.h"
#include "ixctl/topology_command.h"

int main(int argc, char** argv) {
  const ix::SubcommandTable table = {
      "ixctl",
      "Inspect and drive the inferencex-slurm machinery of this node.",
      {
          {"ports", ix::RunPortsCommand, "lease, release and list ports of the node's port broker"},
          {"topology", ix::RunTopologyCommand, "show NUMA nodes, cores, GPUs and host limits placement sees"},
          {"place", ix::RunPlaceCommand, "plan where a recipe arm's ranks run, and whether they fit"},
      },
      "",  // no --version
  };
  return ix::RunSubcommand(table, std::vector<std::string>(argv + 1, argv + argc), std::cout, std::cerr);
}
