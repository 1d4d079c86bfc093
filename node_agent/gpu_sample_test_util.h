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
  return GpuSample{.index = index,
                   .uuid = "GPU-0000000" + std::to_string(index) + "-aaaa-bbbb-cccc-dddddddddddd",
                   .name = "NVIDIA H200",
                   .unix_time = 1700000000.25,
                   .power_watts = 312.5, .energy_joules = 123456789.125, .temperature_celsius = 41,
                   .sm_clock_mhz = 1980, .memory_clock_mhz = 3201,
                   .gpu_utilization_percent = 97, .memory_utilization_percent = 35,
                   .memory_used_bytes = uint64_t{120} << 30, .memory_total_bytes = uint64_t{141} << 30,
                   .ecc_uncorrected_errors = 0, .ecc_corrected_errors = 3, .xid_events = 1};
}

}  // namespace ix::test
