// `ixctl ports lease|release|list`: drives the node's port broker
// (core/node/ports) by hand, for admins and tests.
#pragma once

#include <string>
#include <vector>

namespace ix {

// Runs `ixctl ports ARGS...`; returns the exit status (0 ok, 1 failure, 2 misuse).
int RunPortsCommand(const std::vector<std::string>& args);

}  // namespace ix
