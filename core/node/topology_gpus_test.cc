// The GPUs as NVML and a step see them: bus ids, hwloc's order checked
// against NVML's (fake lists, and the real NVML when there is one), and the
// step's GPUs from Slurm's and CUDA's variables.
#include "core/node/topology.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "core/node/topology_fixtures.h"

namespace ix {
namespace {

using test::kHgxBusIds;
using test::kTopologyFixtures;
using test::LoadFixture;

// ---- NVML ----

TEST(Nvml, NormalizesBusIds) {
  EXPECT_EQ(NormalizeBusId("00000000:1B:00.0").value(), "0000:1b:00.0");
  EXPECT_EQ(NormalizeBusId("0000:1b:00.0").value(), "0000:1b:00.0");
  EXPECT_EQ(NormalizeBusId("DF:00.0").value(), "0000:df:00.0");
  EXPECT_EQ(NormalizeBusId("0001:9D:1f.7").value(), "0001:9d:1f.7");
  for (const char* bad : {"", "1b", "0000:1b:00", "0000:1b:20.0", "0000:1b:00.8", "0000:zz:00.0", "0000:100:00.0"}) {
    EXPECT_FALSE(NormalizeBusId(bad).ok()) << bad;
  }
}

NvmlGpus FakeNvml(std::vector<std::string> ids) {
  NvmlGpus n;
  n.state = NvmlGpus::State::kOk;
  n.bus_ids = std::move(ids);
  return n;
}

TEST(Nvml, ConfirmsOrReportsAMismatch) {
  const Topology t = LoadFixture("hgx-b300-2tib.xml");
  GpuOrderCheck c = CheckGpuOrder(t, FakeNvml(kHgxBusIds));
  EXPECT_EQ(c.state, GpuOrderCheck::State::kConfirmed);
  EXPECT_TRUE(c.ok());
  EXPECT_EQ(c.message, "NVML confirms the 8 GPUs in PCI bus id order");

  std::vector<std::string> swapped = kHgxBusIds;
  std::swap(swapped[2], swapped[3]);
  c = CheckGpuOrder(t, FakeNvml(swapped));
  EXPECT_EQ(c.state, GpuOrderCheck::State::kMismatch);
  EXPECT_FALSE(c.ok());
  EXPECT_EQ(c.message.rfind("GPU 2 is 0000:52:00.0 in PCI bus order (hwloc) but 0000:61:00.0 in NVML order", 0), 0u)
      << c.message;

  c = CheckGpuOrder(t, FakeNvml({kHgxBusIds.begin(), kHgxBusIds.begin() + 4}));
  EXPECT_EQ(c.state, GpuOrderCheck::State::kMismatch);
  EXPECT_EQ(c.message.rfind("hwloc finds 8 NVIDIA GPUs (0000:1b:00.0, ", 0), 0u) << c.message;
  EXPECT_NE(c.message.find("but NVML 4 ("), std::string::npos) << c.message;

  NvmlGpus absent;
  absent.detail = "NVML not present: cannot load libnvidia-ml.so.1";
  c = CheckGpuOrder(t, absent);
  EXPECT_EQ(c.state, GpuOrderCheck::State::kNvmlAbsent);
  EXPECT_TRUE(c.ok());
  EXPECT_EQ(c.message, "NVML not present: cannot load libnvidia-ml.so.1; the GPU order (PCI bus id order from "
                       "hwloc) is not confirmed");

  NvmlGpus failed;
  failed.state = NvmlGpus::State::kFailed;
  failed.detail = "nvmlInit_v2 failed: Driver Not Loaded";
  c = CheckGpuOrder(t, failed);
  EXPECT_EQ(c.state, GpuOrderCheck::State::kNvmlFailed);
  EXPECT_EQ(std::string(GpuOrderStateName(c.state)), "nvml_failed");
}

TEST(Nvml, TheRealOneIsACleanAbsenceWithoutTheDriver) {
  const NvmlGpus n = MakeSystemNvml()->List();
  Result<Topology> t = DiscoverTopology();
  ASSERT_TRUE(t.ok());
  const GpuOrderCheck c = CheckGpuOrder(t.value(), n);
  if (n.state == NvmlGpus::State::kAbsent) {
    EXPECT_EQ(n.detail.rfind("NVML not present: cannot load libnvidia-ml.so.1", 0), 0u) << n.detail;
    EXPECT_EQ(c.state, GpuOrderCheck::State::kNvmlAbsent);
  } else if (n.state == NvmlGpus::State::kOk) {
    EXPECT_TRUE(c.ok()) << c.message;  // a GPU host: hwloc and NVML must agree
  }
  std::printf("NVML: %s\n", c.message.c_str());
}

// ---- the step's GPUs ----

TEST(StepGpus, FromSlurmCudaOrAll) {
  const Topology t = LoadFixture("hgx-b300-2tib.xml");
  Result<StepGpus> s = SelectStepGpus(t, std::string("4,5,6,7"), std::nullopt);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s.value().gpus, (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(s.value().source, "SLURM_STEP_GPUS=4,5,6,7");
  // Inside a constrained step CUDA_VISIBLE_DEVICES is renumbered: Slurm's wins.
  s = SelectStepGpus(t, std::string("4-7"), std::string("0,1,2,3"));
  EXPECT_EQ(s.value().gpus, (std::vector<int>{4, 5, 6, 7}));
  // CUDA_VISIBLE_DEVICES keeps its order: device 0 is GPU 3.
  s = SelectStepGpus(t, std::nullopt, std::string("3, 2"));
  EXPECT_EQ(s.value().gpus, (std::vector<int>{3, 2}));
  EXPECT_EQ(s.value().source, "CUDA_VISIBLE_DEVICES=3, 2");
  s = SelectStepGpus(t, std::nullopt, std::string(""));
  EXPECT_TRUE(s.value().gpus.empty());
  s = SelectStepGpus(t, std::nullopt, std::nullopt);
  EXPECT_EQ(s.value().gpus, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(StepGpus, ErrorsNameTheIndexAndTheGpusPresent) {
  const Topology t = LoadFixture("hgx-b300-2tib.xml");
  Result<StepGpus> s = SelectStepGpus(t, std::nullopt, std::string("0,9"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, "GPU 9 (from CUDA_VISIBLE_DEVICES=0,9) is not in the topology of " + kTopologyFixtures +
                                   "hgx-b300-2tib.xml; GPUs present: 0-7");
  s = SelectStepGpus(t, std::string("8"), std::nullopt);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("GPU 8 (from SLURM_STEP_GPUS=8)"), std::string::npos);
  s = SelectStepGpus(t, std::nullopt, std::string("GPU-8c6b2a3e-1111-2222-3333-444455556666"));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("'GPU-8c6b2a3e-1111-2222-3333-444455556666' is a UUID"), std::string::npos);
  EXPECT_NE(s.error().message.find("needs NVML"), std::string::npos);
  s = SelectStepGpus(t, std::nullopt, std::string("NoDevFiles"));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("'NoDevFiles' in 'NoDevFiles' is not a GPU index"), std::string::npos);
  s = SelectStepGpus(t, std::nullopt, std::string("1,1"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, "CUDA_VISIBLE_DEVICES=1,1: GPU 1 is given twice");
  s = SelectStepGpus(t, std::string("0-x"), std::nullopt);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message.rfind("SLURM_STEP_GPUS: '0-x'", 0), 0u) << s.error().message;
  Topology none = t;
  none.gpus.clear();
  s = SelectStepGpus(none, std::nullopt, std::string("0"));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("GPUs present: none"), std::string::npos);
}

}  // namespace
}  // namespace ix
