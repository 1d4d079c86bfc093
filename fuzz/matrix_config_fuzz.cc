// libFuzzer target for the InferenceX config reader: arbitrary bytes as a
// master config and as a runner config, then (when both load) the whole
// matrix pipeline: generation in every eval mode, JSON, buckets, canary.
// Errors are expected; crashes, leaks, UB and hangs are not.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/matrix/matrix.h"
#include "core/matrix/matrix_buckets.h"
#include "core/matrix/matrix_config.h"
#include "core/matrix/matrix_json.h"
#include "core/matrix/matrix_runners.h"

namespace {

const char kRunners[] =
    "labels:\n  b300: [b300-nv_01, b300-nv_02]\n  cluster:b300-nv: [b300-nv_01]\n  gb300: [gb300-nv_0]\n"
    "hardware:\n  cluster:b300-nv:\n    available-cpu-dram-mib: 2_964_436\n    gpus-per-node: 8\n";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)ix::LoadRunnerConfigString(text, "fuzz-runners.yaml");
  ix::MasterConfig config;
  if (!ix::AppendMasterConfigString(text, "fuzz.yaml", config).ok()) return 0;
  ix::Result<ix::RunnerConfig> runners = ix::LoadRunnerConfigString(kRunners, "runners.yaml");
  if (!runners.ok()) __builtin_trap();
  size_t total = 0;
  for (ix::EvalMode mode : {ix::EvalMode::kDefault, ix::EvalMode::kNone, ix::EvalMode::kOnly, ix::EvalMode::kAll}) {
    ix::SweepOptions o;
    o.evals = mode;
    o.eval_per_topology = mode == ix::EvalMode::kOnly;
    ix::Result<std::vector<ix::MatrixEntry>> m = ix::GenerateMatrix(config, runners.value(), o);
    if (!m.ok()) continue;
    total += ix::MatrixToJson(m.value()).size();
    if (mode == ix::EvalMode::kNone) {
      ix::MatrixBuckets b = ix::MakeBuckets(m.value(), {}, /*trim_conc=*/true);
      total += ix::CanaryToJson(ix::ChooseCanary(std::move(b))).size();
    }
  }
  ix::SweepOptions t;
  t.command = ix::SweepOptions::Command::kTestConfig;
  t.config_keys = {"*"};
  t.min_conc = 2;
  t.max_conc = 64;
  if (ix::Result<std::vector<ix::MatrixEntry>> m = ix::GenerateMatrix(config, runners.value(), t); m.ok()) {
    total += ix::MatrixToJson(m.value()).size();
  }
  return total == SIZE_MAX ? 1 : 0;
}
