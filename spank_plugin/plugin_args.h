// PluginArgs: the arguments an admin writes after the plugin path in
// plugstack.conf, e.g.
//   required /usr/lib64/slurm/spank_inferencex.so recipe_dir=/etc/inferencex/recipes port_range=20000-29999
// Every argument is KEY=VALUE with a known key; anything else is an error
// (logged, and every step that uses the plugin's options then fails), never a
// silent default. Invariant after a successful parse: port_range is valid,
// every path is absolute.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/node/ports.h"
#include "core/recipe/recipe_dir.h"
#include "core/base/result.h"

#ifndef IX_STEPD_PATH
#define IX_STEPD_PATH "/usr/libexec/inferencex/ix-stepd"
#endif

namespace ix {

// What the plugin does to RLIMIT_MEMLOCK of the tasks.
struct MemlockSetting {
  enum class Mode { kUnlimited, kBytes, kKeep };
  Mode mode = Mode::kUnlimited;
  uint64_t bytes = 0;  // kBytes
};

struct PluginArgs {
  std::string recipe_dir = BuiltinRecipeDir();
  PortRange port_range;                           // default 20000-29999
  std::string lease_dir = "/run/inferencex/ports";
  std::string run_dir = "/run/inferencex/steps";  // per-step state
  std::string agent_socket;                       // empty: no node agent
  MemlockSetting memlock;                         // default unlimited
  std::string topology;                           // hwloc XML; empty: the live machine
  std::string stepd = IX_STEPD_PATH;              // the ix-stepd the plugin executes
};

// The keys, for messages and docs.
const std::vector<std::string>& PluginArgKeys();

Result<PluginArgs> ParsePluginArgs(const std::vector<std::string>& args);

}  // namespace ix
