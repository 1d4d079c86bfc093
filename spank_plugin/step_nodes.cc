#include "spank_plugin/step_nodes.h"

#include <cctype>

namespace ix {

Result<std::string> FirstHost(const std::string& hostlist) {
  if (hostlist.empty()) return Error{"the step's node list (SLURM_STEP_NODELIST) is empty"};
  // The first entry ends at a comma outside brackets.
  size_t end = 0;
  int depth = 0;
  for (; end < hostlist.size(); ++end) {
    const char c = hostlist[end];
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) break;
    if (depth < 0 || depth > 1) break;
  }
  const std::string first = hostlist.substr(0, end);
  const size_t open = first.find('[');
  const auto malformed = [&] {
    return Error{"the step's node list (SLURM_STEP_NODELIST) '" + hostlist + "' is not a Slurm host list"};
  };
  if (depth != 0 || first.empty()) return malformed();
  if (open == std::string::npos) {
    if (first.find(']') != std::string::npos) return malformed();
    return first;
  }
  const size_t close = first.find(']', open);
  if (close == std::string::npos || open == 0) return malformed();
  // "prefix[003-004,7]suffix": the first number of the first range, with
  // its leading zeros (Slurm keeps the width).
  size_t digits = open + 1;
  while (digits < close && std::isdigit(static_cast<unsigned char>(first[digits]))) ++digits;
  if (digits == open + 1) return malformed();
  return first.substr(0, open) + first.substr(open + 1, digits - open - 1) + first.substr(close + 1);
}

Status CheckArmNodes(const Arm& arm, int64_t step_nodes) {
  if (arm.nodes == step_nodes) return Ok{};
  if (arm.nodes == 1) {
    return Error{"arm " + arm.name + " runs on one node and this step spans " + std::to_string(step_nodes) +
                 "; run it with srun -N1 (or pick a multi-node arm)"};
  }
  return Error{"arm " + arm.name + " runs on " + std::to_string(arm.nodes) + " nodes and this step has " +
               std::to_string(step_nodes) + "; run it with srun -N" + std::to_string(arm.nodes) +
               " --ntasks-per-node=1 (inside an allocation of at least " + std::to_string(arm.nodes) + " nodes)"};
}

Result<PortList> StepPortsFromReservation(const std::vector<std::string>& names,
                                          const std::optional<std::string>& resv, const PortRange& broker) {
  PortList out;
  if (names.empty()) return out;
  const std::string want = std::to_string(names.size());
  if (!resv || resv->empty()) {
    return Error{"a multi-node arm needs " + want + " ports reserved for the step by Slurm and SLURM_STEP_RESV_PORTS "
                 "is not set: set MpiParams=ports=LO-HI in slurm.conf (docs/MULTINODE.md)"};
  }
  Result<std::vector<int>> ports = ParsePortList(*resv);
  if (!ports) return Error{"SLURM_STEP_RESV_PORTS: " + ports.error().message};
  if (ports.value().size() < names.size()) {
    return Error{"a multi-node arm needs " + want + " ports reserved for the step and SLURM_STEP_RESV_PORTS='" + *resv +
                 "' has " + std::to_string(ports.value().size()) + ": Slurm reserves one more than the tasks per "
                 "node; run with --resv-ports=" + want + " or more tasks per node"};
  }
  for (size_t i = 0; i < names.size(); ++i) {
    const int p = ports.value()[i];
    if (p < 1024) {
      return Error{"SLURM_STEP_RESV_PORTS port " + std::to_string(p) + " is below 1024: the engine, run as the job "
                   "user, cannot listen there"};
    }
    if (p >= broker.lo && p <= broker.hi) {
      return Error{"SLURM_STEP_RESV_PORTS port " + std::to_string(p) + " lies in the port broker's range " +
                   broker.ToString() + " (plugstack.conf port_range=): Slurm's MpiParams=ports= and the broker's "
                   "range must not overlap, or the broker could lease it to another step"};
    }
    out.emplace_back(names[i], p);
  }
  return out;
}

}  // namespace ix
