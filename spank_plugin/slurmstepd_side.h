// The slurmstepd side of the plugin (S_CTX_REMOTE): plans the step (leased
// ports, placement), starts ix-stepd from local task 0 and waits for it,
// exports the IX_* variables to the tasks, and tears everything down at
// the end. Every function returns 0 or -1 and never throws.
#pragma once

extern "C" {
#include <slurm/spank.h>
}

#include "spank_plugin/plugin_args.h"
#include "spank_plugin/step_options.h"

namespace ix {

int StepdInitPostOpt(spank_t sp, const PluginArgs& args, const StepOptions& options);
int StepdTaskInit(spank_t sp);
// Counts local task exits; after the last one, asks ix-stepd to stop.
int StepdTaskExit(spank_t sp);
int StepdExit(spank_t sp, const PluginArgs& args);

}  // namespace ix
