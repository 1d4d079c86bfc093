// GPU sampling through NVML, loaded with dlopen so the agent runs (and says
// so) on a node without the driver.
#pragma once

#include <memory>
#include <string>

#include "node_agent/gpu_sample.h"

namespace ix {

// A source of GPU snapshots, taken once per interval by one thread.
// Invariant: every Sample() of one source lists the same GPUs in the same
// (NVML index) order; readings it cannot give are unset, never 0.
class GpuSource {
 public:
  virtual ~GpuSource() = default;
  virtual GpuSnapshot Sample() = 0;
};

// The NVML library the agent loads: $IX_NVML_LIBRARY when set and not
// empty (tests point it at tests/fakes' libnvidia-ml.so.1), else
// "libnvidia-ml.so.1" (the driver's, found by the dynamic loader).
std::string NvmlLibraryFromEnv();

// Loads `library` (a name the loader searches for, or a path) once and for
// the life of the source: nvmlInit_v2 once, the GPUs' handles, UUIDs and
// names cached, an event set for critical Xid errors. Never fails: a
// library that does not load gives snapshots in state "absent", one that
// loads but does not initialise gives "failed", each with a one-line
// detail. nvmlShutdown and dlclose when the source is destroyed.
//
// Each Sample() asks NVML as little as it can (each call costs about
// 0.5 ms on a real GPU VM): per GPU one nvmlDeviceGetFieldValues for power,
// energy and ECC counts, single calls for what has no field id
// (temperature, clocks, utilisation, memory) and for what the batch did not
// give; what a GPU answers "not supported" to is remembered and not asked
// again. Xid events are drained with one non-blocking wait per event.
std::unique_ptr<GpuSource> OpenNvml(const std::string& library);

}  // namespace ix
