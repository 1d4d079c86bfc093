// The slurmstepd side of the plugin (S_CTX_REMOTE): the SPANK hooks that run
// inside slurmstepd (not ix-stepd, the supervisor they start). They plan the
// step (leased ports, placement), start ix-stepd from local task 0 and wait
// for it, export the IX_* variables to the tasks, and tear everything down
// at the end. Every function returns 0 or -1 and never throws.
#pragma once

extern "C" {
#include <slurm/spank.h>
}

#include "spank_plugin/plugin_args.h"
#include "spank_plugin/step_options.h"

namespace ix {

int SlurmstepdInitPostOpt(spank_t sp, const PluginArgs& args, const StepOptions& options);
int SlurmstepdTaskInit(spank_t sp);
// Counts local task exits; after the last one, asks ix-stepd to stop.
int SlurmstepdTaskExit(spank_t sp);
int SlurmstepdExit(spank_t sp, const PluginArgs& args);

}  // namespace ix
