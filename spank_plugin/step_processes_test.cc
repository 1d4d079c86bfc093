#include "spank_plugin/step_processes.h"

#include <gtest/gtest.h>

namespace ix {
namespace {

TEST(NarrowVisibleDevices, MapsStepIndicesThroughWhatTheStepSees) {
  EXPECT_EQ(NarrowVisibleDevices(std::nullopt, {2, 3}), "2,3");
  EXPECT_EQ(NarrowVisibleDevices(std::string(""), {0}), "0");
  // Slurm gave the step GPUs 4-7: rank 1's step-local 2,3 are 6,7.
  EXPECT_EQ(NarrowVisibleDevices(std::string("4,5,6,7"), {2, 3}), "6,7");
  EXPECT_EQ(NarrowVisibleDevices(std::string("GPU-a,GPU-b"), {1}), "GPU-b");
  // An index the step does not see is passed as it is, not dropped.
  EXPECT_EQ(NarrowVisibleDevices(std::string("4,5"), {5}), "5");
}

TEST(EngineMetricsUrls, EachEnginesOriginWithMetricsNotTheRouterOrAServer) {
  LaunchPlan plan;
  const auto process = [](const std::string& name, const std::string& url) {
    PlannedProcess p;
    p.name = name;
    if (!url.empty()) p.readiness.push_back(ReadinessCheck{ReadinessTemplate::Kind::kHttpOk, url});
    return p;
  };
  plan.processes = {process("mooncake_master", "http://127.0.0.1:30000/"),
                    process("engine-0", "http://localhost:20001/health"),
                    process("engine-1", "http://localhost:20002/v1/models"), process("engine-2", ""),
                    process("router", "http://localhost:20000/health")};
  EXPECT_EQ(EngineMetricsUrls(plan),
            (std::vector<std::string>{"http://localhost:20001/metrics", "http://localhost:20002/metrics"}));
}

TEST(FindProgram, AnExecutableOnPathAbsoluteEntriesOnly) {
  EXPECT_EQ(FindProgram("sh").empty(), false);
  EXPECT_EQ(FindProgram("ix-no-such-program"), "");
  EXPECT_EQ(FindProgram("bin/sh"), "");  // a name, not a path
}

}  // namespace
}  // namespace ix
