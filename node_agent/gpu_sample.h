// GpuSample: one GPU's readings at one instant, as the agent takes them
// through NVML every interval. A reading NVML could not give (the field is
// not supported on this GPU, or the call failed) is unset, never 0: a
// power of 0 W would integrate into a wrong energy.
//
// Invariants: `index` is NVML's index (nvidia-smi's `index` column, the
// physical order, not CUDA_VISIBLE_DEVICES's); `unix_time` is when the
// readings were taken (seconds since the epoch, sub-second precision).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ix {

struct GpuSample {
  unsigned index = 0;
  std::string uuid;          // "GPU-..." ("" when unknown)
  std::string name;          // "NVIDIA H200"
  double unix_time = 0;
  std::optional<double> power_watts;          // board power as nvidia-smi's power.draw (1 s average
                                              // on Ampere and newer, else instantaneous)
  std::optional<double> energy_joules;        // the driver's counter since it loaded (monotonic)
  std::optional<unsigned> temperature_celsius;
  std::optional<unsigned> sm_clock_mhz;       // clocks.current.sm
  std::optional<unsigned> memory_clock_mhz;   // clocks.current.memory
  std::optional<unsigned> gpu_utilization_percent;     // utilization.gpu
  std::optional<unsigned> memory_utilization_percent;  // utilization.memory
  std::optional<uint64_t> memory_used_bytes;
  std::optional<uint64_t> memory_total_bytes;
  std::optional<uint64_t> ecc_uncorrected_errors;  // volatile, since the driver loaded
  std::optional<uint64_t> ecc_corrected_errors;
  std::optional<uint64_t> xid_events;  // critical Xid events seen since the agent began listening
};

// What NVML gave this interval: the GPUs (by index), or why none.
struct GpuSnapshot {
  // "ok": sampled; "absent": no libnvidia-ml.so.1 (said once, not an
  // error); "failed": NVML loaded but did not initialise (`detail` says
  // which call). When "ok", `detail` lists the calls that failed this
  // time (a reading left unset), "" when none did.
  std::string state = "absent";
  std::string detail;
  std::vector<GpuSample> gpus;
  std::string version;  // "NVML 12.570.86.15, driver 570.86.15" when "ok"
};

}  // namespace ix
