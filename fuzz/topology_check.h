// What the two topology targets check of a Topology that loaded: it goes
// through the topology cache format (core/node/topology_json.h) and comes back
// equal field by field, and writing it again gives the same bytes.
#pragma once

#include <string>

#include "core/node/topology.h"
#include "core/node/topology_json.h"
#include "fuzz/fuzz_util.h"

namespace ixfuzz {

inline bool SameTopology(const ix::Topology& a, const ix::Topology& b) {
  if (a.source != b.source || a.notes != b.notes || a.numa_nodes.size() != b.numa_nodes.size() ||
      a.cores.size() != b.cores.size() || a.gpus.size() != b.gpus.size()) {
    return false;
  }
  for (size_t i = 0; i < a.numa_nodes.size(); ++i) {
    const ix::NumaNode &x = a.numa_nodes[i], &y = b.numa_nodes[i];
    if (x.os_index != y.os_index || x.total_bytes != y.total_bytes || x.free_bytes != y.free_bytes ||
        x.cpus != y.cpus || x.cores != y.cores) {
      return false;
    }
  }
  for (size_t i = 0; i < a.cores.size(); ++i) {
    const ix::Core &x = a.cores[i], &y = b.cores[i];
    if (x.os_index != y.os_index || x.package != y.package || x.numa != y.numa || x.cpus != y.cpus) return false;
  }
  for (size_t i = 0; i < a.gpus.size(); ++i) {
    const ix::Gpu &x = a.gpus[i], &y = b.gpus[i];
    if (x.index != y.index || x.bus_id != y.bus_id || x.vendor_id != y.vendor_id || x.device_id != y.device_id ||
        x.class_id != y.class_id || x.local_numa != y.local_numa || x.numa != y.numa) {
      return false;
    }
  }
  return true;
}

// `t` (free memory unset) written as a cache and read back must be `t`.
inline void CheckCacheRoundTrip(const ix::Topology& t, const char* what) {
  const std::string json = ix::TopologyToCacheJson(t);
  ix::Result<ix::Topology> back = ix::TopologyFromCacheJson(json, "round trip");
  if (!back) Fail(std::string(what) + " does not read back from its cache JSON: " + back.error().message + "\n" + json);
  Check(SameTopology(t, back.value()), std::string(what) + " changed on its way through the cache JSON\n" + json);
  Check(ix::TopologyToCacheJson(back.value()) == json, std::string(what) + ": the cache JSON is not stable");
}

}  // namespace ixfuzz
