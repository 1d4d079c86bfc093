// One sample of the node, as the agent takes it every interval and as
// `ix-node-agent --once --json` prints it: the memory of each NUMA node,
// /dev/shm, and the GPUs. GPU sampling through NVML is not built yet:
// `gpus` is always empty and `nvml` says whether NVML loads and that it is
// not sampled.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"

namespace ix {

class NvmlSource;

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
  std::string nvml;              // whether NVML loads, and that GPUs are not sampled yet
  std::vector<std::string> notes;
};

// Where a sample comes from; the paths are parameters so tests use
// fixture directories.
struct NodeSampleSources {
  std::string system_dir = "/sys/devices/system";  // holds node/nodeN/{cpulist,meminfo}
  std::string shm_path = "/dev/shm";
  const NvmlSource* nvml = nullptr;  // nullptr: NVML not looked at
};

// A per-node meminfo ("Node 0 MemTotal:  24683748 kB" lines) as a
// NumaMemory (its `node` left 0). A missing line or a value that is not a
// number is an Error naming `where`.
Result<NumaMemory> ParseNumaMemory(std::string_view text, const std::string& where);

NodeSample TakeNodeSample(const NodeSampleSources& sources);

// `{"numa":[{"node":0,"mem_total_bytes":...,"mem_free_bytes":...,
// "mem_available_bytes":...}],"shm":{"path":...,"size_bytes":...,
// "free_bytes":...,"used_bytes":...},"gpus":[],"nvml":"...","notes":[...]}`;
// "shm" is null when it could not be read.
std::string NodeSampleToJson(const NodeSample& sample, bool pretty);

}  // namespace ix
