// libFuzzer target for the topology cache (core/node/topology_json.h
// TopologyFromCacheJson): the files DiscoverTopologyCached and
// LoadTopologyXmlCached keep per node. A document that loads must be written
// back (TopologyToCacheJson) to a document that loads to an equal Topology,
// and writing that gives the same bytes. Errors are expected; crashes,
// leaks, UB, hangs and a broken round trip are bugs.
#include <cstddef>
#include <cstdint>

#include "fuzz/topology_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ix::Result<ix::Topology> t = ix::TopologyFromCacheJson(ixfuzz::AsText(data, size), "fuzz.json");
  if (!t) {
    ixfuzz::Check(t.error().message.rfind("fuzz.json", 0) == 0, "an error that does not name the file");
    return 0;
  }
  ixfuzz::CheckCacheRoundTrip(t.value(), "a topology read from a cache");
  return 0;
}
