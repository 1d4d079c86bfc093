// MemlockPolicy: what the plugin does to RLIMIT_MEMLOCK of a step's tasks.
// Engines that pin host memory (Engram tables offloaded to host DRAM are
// registered with CUDA) need a limit that covers it; nothing else does, so
// the limit is raised only for steps whose recipe pins host memory, only as
// far as the site's cap (plugstack memlock=) allows, never lowered, and
// never at all under memlock=keep. Pure: decided and applied to
// slurmstepd itself in init_post_opt (its tasks inherit the limit; ix-stepd
// and the servers start in task_init, before Slurm gives the client srun's
// propagated limits at its exec), and written in the step's placement
// record.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/node/topology.h"
#include "spank_plugin/plugin_args.h"

namespace ix {

struct MemlockDecision {
  // Set the soft limit to this (and the hard one to at least this);
  // nullopt: the tasks keep what they have.
  std::optional<MemlockLimit> raise_to;
  // The limit the tasks will run with (nullopt: unknown).
  std::optional<MemlockLimit> tasks_limit;
  std::string reason;  // one sentence, for placement.json and the log
  std::string basis;   // the first half of `reason`: why a raise was wanted
};

// `pinned` names the recipe's pinned host-memory needs ("engram_tables");
// empty when it pins none. `current` is slurmstepd's soft limit now.
MemlockDecision DecideMemlock(const std::string& pinned, const MemlockSetting& site,
                              const std::optional<MemlockLimit>& current);

// The raise failed (`error`, e.g. no CAP_SYS_RESOURCE): the tasks keep
// `actual`, which the placement check then judges.
void RecordRaiseFailure(MemlockDecision& decision, const std::optional<MemlockLimit>& actual,
                        const std::string& error);

// "unlimited", "keep" or the byte count, as written in plugstack.conf.
std::string DescribeMemlockSetting(const MemlockSetting& site);

}  // namespace ix
