// `ixctl topology` and `ixctl place`: show what placement sees on this node
// (or in an hwloc XML file), and where a recipe arm's ranks would go.
#pragma once

#include <string>
#include <vector>

namespace ix {

// Exit status: 0 ok, 1 failure, 2 misuse.
int RunTopologyCommand(const std::vector<std::string>& args);
// Exit status: 0 the plan fits, 1 refused or failed, 2 misuse.
int RunPlaceCommand(const std::vector<std::string>& args);

}  // namespace ix
