// StepNodes: where this node stands in a step across several nodes (a
// multi-node arm, docs/MULTINODE.md) — its rank, the step's node count, the
// head (the step's first node, rank 0) by name and by the address Slurm
// knows it by — and the decisions that follow from Slurm's facts alone:
// whether the arm fits the step, and the step ports (the ports every node
// must agree on), taken from Slurm's reserved ports of the step. Pure, so
// tested without Slurm; slurmstepd_side.cc asks Slurm and hands the facts in.
// Invariant of a StepNodes: 0 <= node_rank < nodes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/base/result.h"
#include "core/node/ports.h"
#include "core/recipe/launch_plan.h"
#include "core/recipe/recipe.h"

namespace ix {

struct StepNodes {
  int64_t nodes = 1;
  int64_t node_rank = 0;
  std::string head_name;  // the step's first node, as Slurm names it
  std::string head_addr;  // its NodeAddr, numeric
};

// The first host of a Slurm host list ("ixn[1-2],gpu7" -> "ixn1",
// "rack1-n[003-004]" -> "rack1-n003"): the step's node 0. An Error when the
// text is empty or malformed.
Result<std::string> FirstHost(const std::string& hostlist);

// Whether `arm` can run on a step of `step_nodes` nodes: a multi-node arm
// needs exactly its node count, a single-node arm one node. The Error says
// what to run instead (srun -N...).
Status CheckArmNodes(const Arm& arm, int64_t step_nodes);

// The arm's step ports numbered from Slurm's reservation for the step
// (SLURM_STEP_RESV_PORTS: the same on every node), in order: the first
// names.size() reserved ports. Errors name the variable and what to change:
// no reservation (MpiParams=ports= unset), too few ports, a port below 1024,
// or one inside the broker's range `broker` (port_range=), which would let
// the broker hand it to another step.
Result<PortList> StepPortsFromReservation(const std::vector<std::string>& names,
                                          const std::optional<std::string>& resv, const PortRange& broker);

}  // namespace ix
