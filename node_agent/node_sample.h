// One sample of the node, as the agent takes it every interval and as
// `ix-node-agent --once --json` prints it: the memory of each NUMA node,
// /dev/shm, and the GPUs through a GpuSource (NVML) when one is given.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"
#include "node_agent/gpu_sample.h"

namespace ix {

class GpuSource;

// One NUMA node's memory as the kernel counts it in
// /sys/devices/system/node/nodeN/meminfo. Invariant: free_bytes <=
// available_bytes (available adds Inactive(file) to MemFree).
struct NumaMemory {
  int node = 0;
  uint64_t total_bytes = 0;      // MemTotal
  uint64_t free_bytes = 0;       // MemFree
  uint64_t available_bytes = 0;  // MemFree + Inactive(file), what placement counts (ParseNodeMeminfo)
};

// A tmpfs (/dev/shm) by statvfs. Invariant: used_bytes <= size_bytes.
struct ShmSpace {
  std::string path;
  uint64_t size_bytes = 0;  // f_blocks
  uint64_t free_bytes = 0;  // f_bavail: what an unprivileged writer may still use
  uint64_t used_bytes = 0;  // f_blocks - f_bfree
};

// A sample. What could not be read is left out (a NUMA node) or unset
// (shm), and `notes` says why; a sample is always taken.
struct NodeSample {
  std::vector<NumaMemory> numa;  // by node number
  std::optional<ShmSpace> shm;
  std::vector<GpuSample> gpus;   // by NVML index; empty without NVML
  std::string nvml;              // "NVML 12.x, driver y: N GPUs", or why there are none
  std::vector<std::string> notes;
};

// Where a sample comes from; the paths are parameters so tests use
// fixture directories.
struct NodeSampleSources {
  std::string system_dir = "/sys/devices/system";  // holds node/nodeN/{cpulist,meminfo}
  std::string shm_path = "/dev/shm";
  GpuSource* gpus = nullptr;  // nullptr: GPUs not looked at (the agent's loop samples them apart)
};

// A per-node meminfo ("Node 0 MemTotal:  24683748 kB" lines) as a
// NumaMemory (its `node` left 0). A missing line or a value that is not a
// number is an Error naming `where`.
Result<NumaMemory> ParseNumaMemory(std::string_view text, const std::string& where);

NodeSample TakeNodeSample(const NodeSampleSources& sources);

// `{"numa":[{"node":0,"mem_total_bytes":...,"mem_free_bytes":...,
// "mem_available_bytes":...}],"shm":{"path":...,"size_bytes":...,
// "free_bytes":...,"used_bytes":...},"gpus":[{"index":0,"uuid":...,
// "name":...,"power_watts":...,"energy_joules":...,"temperature_celsius":...,
// "sm_clock_mhz":...,"memory_clock_mhz":...,"gpu_utilization_percent":...,
// "memory_utilization_percent":...,"memory_used_bytes":...,
// "memory_total_bytes":...,"ecc_uncorrected_errors":...,
// "ecc_corrected_errors":...,"xid_events":...}],"nvml":"...","notes":[...]}`;
// "shm" and a GPU reading NVML did not give are null.
std::string NodeSampleToJson(const NodeSample& sample, bool pretty);

}  // namespace ix
