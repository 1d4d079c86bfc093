// The srun/sbatch/salloc side of the plugin (S_CTX_LOCAL, S_CTX_ALLOCATOR):
// validates the --inferencex-* options before anything is allocated.
#pragma once

#include "spank_plugin/plugin_args.h"
#include "spank_plugin/step_options.h"

namespace ix {

// Returns 0 to go on, -1 (after printing why on srun's stderr) to stop srun
// before it asks for an allocation.
int SrunInitPostOpt(const PluginArgs& args, const StepOptions& options);

}  // namespace ix
