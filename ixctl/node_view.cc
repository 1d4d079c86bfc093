#include "ixctl/node_view.h"

#include <memory>
#include <utility>

namespace ix {

Result<NodeView> LoadNode(const std::string& file) {
  NodeView view;
  if (!file.empty()) {
    Result<Topology> t = LoadTopologyXml(file);
    if (!t) return t.error();
    view.topology = std::move(t).value();
    return view;
  }
  Result<Topology> t = DiscoverTopology();
  if (!t) return t.error();
  view.topology = std::move(t).value();
  std::unique_ptr<HostProbe> probe = MakeSystemHostProbe();
  MeasureFreeMemory(view.topology, *probe);
  view.host = ReadHostState(*probe);
  const GpuOrderCheck check = CheckGpuOrder(view.topology, MakeSystemNvml()->List());
  view.topology.notes.push_back(std::string("NVML: ") + GpuOrderStateName(check.state) +
                                (check.message.empty() ? "" : ": " + check.message));
  if (!check.ok()) return Error{check.message};
  return view;
}

}  // namespace ix
