// SlurmApi: the two questions the plugin asks slurmctld for a step across
// nodes, through libslurm's public API as the process that loaded the
// plugin (slurmstepd, srun) already has it: the head's NodeAddr, and ending
// the whole step when this node's part of it failed before its engine ran.
// The functions are looked up at run time (dlsym), so the plugin links no
// libslurm of its own and one build serves srun and slurmstepd alike; each is
// called through the prototype of the slurm.h the plugin is compiled against,
// and the build fails where that prototype is not the one expected for the
// header's SLURM_VERSION_NUMBER (slurm_api.cc).
#pragma once

#include <cstdint>
#include <string>

#include "core/base/result.h"

namespace ix {

// The address Slurm knows node `name` by (its NodeAddr, slurm_load_node_single),
// resolved to a numeric IPv4/IPv6 address when it is a host name. Errors
// name the node and what failed.
Result<std::string> SlurmNodeAddress(const std::string& name);

// Sends `signal` to every task of step `job`.`step` on all its nodes
// (slurm_kill_job_step, as `scancel --signal` would).
Status SlurmSignalStep(uint32_t job, uint32_t step, int signal);

}  // namespace ix
