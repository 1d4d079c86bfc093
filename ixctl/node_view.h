// The node `ixctl topology` shows and `ixctl place` plans on: a topology
// from an hwloc XML file, or this machine's with its live host facts.
#pragma once

#include <optional>
#include <string>

#include "core/base/result.h"
#include "core/node/topology.h"

namespace ix {

// The topology to show or plan on, and the live facts that go with it.
// Invariant: host is set only for this machine (never for a file).
struct NodeView {
  Topology topology;
  std::optional<HostState> host;
};

// From `file` (an hwloc XML file) when non-empty, else this machine with
// free memory, host limits and the NVML cross-check of the GPU order (a
// mismatch is an error: placement would bind the wrong GPUs).
Result<NodeView> LoadNode(const std::string& file);

}  // namespace ix
