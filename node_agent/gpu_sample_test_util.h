// A GPU sample with every reading set, the one builder the agent's tests
// share (the Prometheus text, the node sample's JSON, the /metrics server):
// readings that are not round in any unit, so a wrong conversion shows.
#pragma once

#include <cstdint>
#include <string>

#include "node_agent/gpu_sample.h"

namespace ix::test {

// GPU `index`, its UUID made from the index.
inline GpuSample FullGpu(unsigned index) {
  GpuSample g;
  g.index = index;
  g.uuid = "GPU-0000000" + std::to_string(index) + "-aaaa-bbbb-cccc-dddddddddddd";
  g.name = "NVIDIA H200";
  g.unix_time = 1700000000.25;
  g.power_watts = 312.5;
  g.energy_joules = 123456789.125;
  g.temperature_celsius = 41;
  g.sm_clock_mhz = 1980;
  g.memory_clock_mhz = 3201;
  g.gpu_utilization_percent = 97;
  g.memory_utilization_percent = 35;
  g.memory_used_bytes = uint64_t{120} << 30;
  g.memory_total_bytes = uint64_t{141} << 30;
  g.ecc_uncorrected_errors = 0;
  g.ecc_corrected_errors = 3;
  g.xid_events = 1;
  return g;
}

}  // namespace ix::test
