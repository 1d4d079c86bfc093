// `ixctl topology`: show what placement sees on this node (or in an hwloc
// XML file).
#pragma once

#include <string>
#include <vector>

namespace ix {

// Exit status: 0 ok, 1 failure, 2 misuse.
int RunTopologyCommand(const std::vector<std::string>& args);

}  // namespace ix
