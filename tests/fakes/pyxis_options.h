// The Pyxis double's options: the --container-* command-line options it
// registers (most accepted and ignored, tests/fakes/README.md, "Options"),
// and its plugstack.conf arguments.
#pragma once

#include <string>
#include <vector>

extern "C" {
#include <slurm/spank.h>
}

#include "pyxis_types.h"

namespace ixfake::pyxis {

// Registers every --container-* option; their values go to g.args (an error
// to g.option_error, and the option fails). "" or why not.
std::string RegisterOptions(spank_t sp);

// plugstack.conf arguments: runtime_dir=DIR (also Pyxis's runtime_path=DIR)
// sets g.runtime_dir; Pyxis's other arguments are accepted and ignored;
// anything else is an error.
std::string ParsePluginArgs(int ac, char** av);

// "SRC:DST[:FLAGS],..." appended to `out`, FLAGS joined by '+' (ro, rw;
// others accepted); "" or why not.
std::string ParseMounts(const std::string& value, std::vector<MountSpec>& out);

}  // namespace ixfake::pyxis
