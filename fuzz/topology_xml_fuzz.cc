// libFuzzer target for topology XML (core/node/topology.h TopologyFromXmlText,
// what LoadTopologyXml does with a file's text: hwloc's XML loader, the
// system's, then the project's Build of a Topology from what hwloc made of
// it). A topology that loads must keep the invariants at the top of
// topology.h, which the cache reader checks: so it must go through the
// cache JSON and come back equal. Errors are expected; crashes, leaks, UB,
// hangs and a loaded topology that the cache refuses or changes are bugs.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/topology_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ix::Result<ix::Topology> t = ix::TopologyFromXmlText(std::string(ixfuzz::AsText(data, size)), "fuzz.xml");
  if (!t) return 0;
  ixfuzz::CheckCacheRoundTrip(t.value(), "a topology loaded from XML");
  (void)ix::TopologySummary(t.value(), nullptr);
  (void)ix::TopologyToJson(t.value(), nullptr, false);
  return 0;
}
