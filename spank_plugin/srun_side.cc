#include "spank_plugin/srun_side.h"

extern "C" {
#include <slurm/spank.h>
}

namespace ix {

int SrunInitPostOpt(const PluginArgs& args, const StepOptions& options) {
  if (!options.Active()) return 0;
  Status s = ValidateStepOptions(options, args.recipe_dir);
  if (!s) {
    slurm_error("inferencex: %s", s.error().message.c_str());
    return -1;
  }
  return 0;
}

}  // namespace ix
