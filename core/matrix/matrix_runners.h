// RunnerConfig: InferenceX's runners.yaml, read and validated. `labels` maps
// a runner label (what a master-config row names in `runner:`) to its node
// names; `hardware` gives per-label host memory and GPUs per node, which
// the generator needs for `kv-offloading: dram` rows. Integers may be
// written YAML 1.1 style (`2_063_837`).
//
// Invariants after a successful load: labels keep their written order and
// are unique; every hardware value is a positive integer.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/base/result.h"

namespace ix {

// Host DRAM and GPUs of one runner label's nodes (both > 0).
struct RunnerHardware {
  int64_t available_cpu_dram_mib = 0;
  int64_t gpus_per_node = 0;
};

// A runner label and its node names, as written.
struct RunnerLabel {
  std::string name;
  std::vector<std::string> nodes;
};

// The whole runners.yaml; `label_index` maps a label to `labels`.
struct RunnerConfig {
  std::string file;
  std::vector<RunnerLabel> labels;
  std::unordered_map<std::string, size_t> label_index;
  std::unordered_map<std::string, RunnerHardware> hardware;

  const RunnerLabel* FindLabel(const std::string& name) const;
  const RunnerHardware* FindHardware(const std::string& name) const;
};

Result<RunnerConfig> LoadRunnerConfigFile(const std::string& path);
Result<RunnerConfig> LoadRunnerConfigString(std::string_view text, const std::string& name);

}  // namespace ix
