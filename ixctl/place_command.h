// `ixctl place`: where a recipe arm's ranks would run on this node (or on
// the node an hwloc XML file describes), and whether they fit.
#pragma once

#include <string>
#include <vector>

namespace ix {

// Exit status: 0 the plan fits, 1 refused or failed, 2 misuse.
int RunPlaceCommand(const std::vector<std::string>& args);

}  // namespace ix
