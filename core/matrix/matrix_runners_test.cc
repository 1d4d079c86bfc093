#include "core/matrix/matrix_runners.h"

#include <gtest/gtest.h>

namespace ix {
namespace {

TEST(MatrixRunners, ReadsLabelsAndUnderscoreIntegers) {
  Result<RunnerConfig> r = LoadRunnerConfigString(
      "labels:\n  b300: [b300-nv_01, b300-nv_02]\n  cluster:b300-nv: [b300-nv_01]\n"
      "hardware:\n  cluster:b300-nv:\n    available-cpu-dram-mib: 2_964_436\n    gpus-per-node: 8\n",
      "runners.yaml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r.value().labels.size(), 2u);
  EXPECT_EQ(r.value().labels[0].nodes[1], "b300-nv_02");
  ASSERT_NE(r.value().FindHardware("cluster:b300-nv"), nullptr);
  EXPECT_EQ(r.value().FindHardware("cluster:b300-nv")->available_cpu_dram_mib, 2964436);
  EXPECT_EQ(r.value().FindHardware("b300"), nullptr);
}

std::string Err(const std::string& text) {
  Result<RunnerConfig> r = LoadRunnerConfigString(text, "runners.yaml");
  EXPECT_FALSE(r.ok()) << text;
  return r.ok() ? "" : r.error().message;
}

TEST(MatrixRunners, Rejections) {
  EXPECT_NE(Err("labels: {}\nnodes: {}\n").find("field 'nodes': Extra inputs are not permitted"), std::string::npos);
  EXPECT_NE(Err("hardware: {}\n").find("field 'labels': Field required"), std::string::npos);
  EXPECT_NE(Err("labels: {a: [x]}\nhardware: {a: {gpus-per-node: 8}}\n")
                .find("field 'hardware.a.available-cpu-dram-mib': Field required"),
            std::string::npos);
  EXPECT_NE(Err("labels: {a: [x]}\nhardware: {a: {gpus-per-node: 8, available-cpu-dram-mib: '1_000'}}\n")
                .find("Input should be a valid integer, got a string '1_000'"),
            std::string::npos);
  EXPECT_NE(Err("labels: {a: x}\n").find("field 'labels.a': Input should be a valid list"), std::string::npos);
  EXPECT_NE(Err("").find("runners.yaml: file is empty"), std::string::npos);
  EXPECT_NE(Err("- a\n").find("must be a mapping"), std::string::npos);
}

TEST(MatrixRunners, TheFixtureLoads) {
  Result<RunnerConfig> r = LoadRunnerConfigFile(IX_INFERENCEX_FIXTURES "/runners.yaml");
  ASSERT_TRUE(r.ok()) << r.error().message << " (are the InferenceX fixtures in ../shared?)";
  EXPECT_EQ(r.value().FindHardware("cluster:gb300-nv")->gpus_per_node, 4);
}

}  // namespace
}  // namespace ix
