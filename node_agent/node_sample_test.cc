#include "node_agent/node_sample.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <cctype>
#include <filesystem>

#include "core/base/file_text.h"
#include "node_agent/gpu_sample_test_util.h"
#include "node_agent/nvml_sampler.h"
#include "tests/support/test.h"

namespace ix {
namespace {

using ::testing::ElementsAre, ::testing::HasSubstr, ::testing::IsEmpty, ::testing::StartsWith;

// A node's meminfo as the kernel writes it (a shortened copy of a real one).
std::string Meminfo(int node, uint64_t total_kb, uint64_t free_kb, uint64_t inactive_file_kb) {
  const std::string n = "Node " + std::to_string(node) + " ";
  return n + "MemTotal:       " + std::to_string(total_kb) + " kB\n" +
         n + "MemFree:        " + std::to_string(free_kb) + " kB\n" +
         n + "MemUsed:         2840452 kB\n" +
         n + "Inactive(file):  " + std::to_string(inactive_file_kb) + " kB\n" +
         n + "HugePages_Total:     0\n" +
         n + "HugePages_Free:      0\n";
}

TEST(ParseNumaMemory, ReadsTotalFreeAndAvailableInBytes) {
  Result<NumaMemory> m = ParseNumaMemory(Meminfo(0, 24683748, 21843296, 1134092), "meminfo");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m.value().total_bytes, 24683748ull * 1024);
  EXPECT_EQ(m.value().free_bytes, 21843296ull * 1024);
  EXPECT_EQ(m.value().available_bytes, (21843296ull + 1134092) * 1024);
}

TEST(ParseNumaMemory, AMissingOrMalformedLineIsAnErrorNamingTheFile) {
  EXPECT_EQ(ParseNumaMemory("Node 0 MemFree: 1 kB\nNode 0 Inactive(file): 1 kB\n", "f").error().message,
            "f: no MemTotal line");
  EXPECT_EQ(ParseNumaMemory("Node 0 MemTotal: 2 kB\nNode 0 HugePages_Free: 0\n", "f").error().message,
            "f: no MemFree line");
  EXPECT_EQ(ParseNumaMemory("Node 0 MemTotal: lots kB\n", "f").error().message,
            "f: 'Node 0 MemTotal: lots kB': expected a number of kB");
  EXPECT_THAT(ParseNumaMemory("Node 0 MemTotal: 99999999999999999999 kB\n", "f").error().message,
              HasSubstr("expected a number of kB"));
  EXPECT_EQ(ParseNumaMemory("Node 0 MemTotal: 2 kB\nNode 0 MemFree: 1 kB\n", "f").error().message,
            "f: no Inactive(file) line");
}

// A GpuSource that answers what the test says.
class FakeGpus : public GpuSource {
 public:
  explicit FakeGpus(GpuSnapshot snapshot) : snapshot_(std::move(snapshot)) {}
  GpuSnapshot Sample() override { return snapshot_; }

 private:
  GpuSnapshot snapshot_;
};

class NodeSampleTest : public ::testing::Test {
 protected:
  // node/nodeN/{cpulist,meminfo} under the fixture's system directory; no
  // meminfo when `meminfo` is empty.
  void AddNode(int node, const std::string& cpulist, const std::string& meminfo) {
    const std::string d = dir_.path() + "/node/node" + std::to_string(node);
    std::filesystem::create_directories(d);
    ASSERT_TRUE(WriteFileAtomic(d + "/cpulist", cpulist + "\n").ok());
    if (!meminfo.empty()) {
      ASSERT_TRUE(WriteFileAtomic(d + "/meminfo", meminfo).ok());
    }
  }
  NodeSampleSources Sources(GpuSource* gpus = nullptr) const {
    NodeSampleSources s;
    s.system_dir = dir_.path();
    s.shm_path = dir_.path();
    s.gpus = gpus;
    return s;
  }

  test::TempDir dir_{"ix-node-sample"};
};

TEST_F(NodeSampleTest, EveryNodeInNumberOrderWithItsMemory) {
  AddNode(1, "", Meminfo(1, 2048, 1024, 512));  // CPU-less memory is listed too
  AddNode(0, "0-3", Meminfo(0, 4096, 1000, 100));
  const NodeSample s = TakeNodeSample(Sources());
  ASSERT_EQ(s.numa.size(), 2u);
  EXPECT_EQ(s.numa[0].node, 0);
  EXPECT_EQ(s.numa[0].total_bytes, 4096u * 1024);
  EXPECT_EQ(s.numa[0].free_bytes, 1000u * 1024);
  EXPECT_EQ(s.numa[0].available_bytes, 1100u * 1024);
  EXPECT_EQ(s.numa[1].node, 1);
  EXPECT_EQ(s.numa[1].total_bytes, 2048u * 1024);
  ASSERT_TRUE(s.shm.has_value());
  EXPECT_EQ(s.shm->path, dir_.path());
  EXPECT_GT(s.shm->size_bytes, 0u);
  EXPECT_LE(s.shm->used_bytes, s.shm->size_bytes);
  EXPECT_LE(s.shm->free_bytes, s.shm->size_bytes);
  EXPECT_THAT(s.notes, IsEmpty());
}

TEST_F(NodeSampleTest, WhatCannotBeReadIsLeftOutWithANote) {
  AddNode(0, "0-1", Meminfo(0, 4096, 1000, 100));
  AddNode(1, "2-3", "");
  AddNode(2, "4-5", "Node 2 MemTotal: many kB\n");
  NodeSampleSources sources = Sources();
  sources.shm_path = dir_.path() + "/no-shm";
  const NodeSample s = TakeNodeSample(sources);
  ASSERT_EQ(s.numa.size(), 1u);
  EXPECT_EQ(s.numa[0].node, 0);
  EXPECT_FALSE(s.shm.has_value());
  const std::string node = dir_.path() + "/node/node";
  EXPECT_THAT(s.notes,
              ElementsAre("memory of NUMA node 1 unknown: " + node +
                              "1/meminfo: cannot read: No such file or directory",
                          "memory of NUMA node 2 unknown: " + node + "2/meminfo: 'Node 2 MemTotal: many kB': expected "
                          "a number of kB",
                          "shm unknown: statvfs " + sources.shm_path + ": No such file or directory"));
}

TEST_F(NodeSampleTest, NoNodesAtAllIsANote) {
  const NodeSample s = TakeNodeSample(Sources());
  EXPECT_THAT(s.numa, IsEmpty());
  ASSERT_FALSE(s.notes.empty());
  EXPECT_THAT(s.notes[0], StartsWith("NUMA nodes unknown: "));
}

TEST_F(NodeSampleTest, NvmlSaysWhatItIsAndTheGpusAreItsSample) {
  AddNode(0, "0", Meminfo(0, 4096, 1000, 100));
  EXPECT_EQ(TakeNodeSample(Sources()).nvml, "NVML not looked at");

  GpuSnapshot absent;
  absent.detail = "NVML not present: cannot load libnvidia-ml.so.1";
  FakeGpus none(absent);
  EXPECT_EQ(TakeNodeSample(Sources(&none)).nvml, "NVML not present: cannot load libnvidia-ml.so.1");

  GpuSnapshot failed;
  failed.state = "failed";
  failed.detail = "nvmlInit_v2 failed: Driver Not Loaded";
  FakeGpus broken(failed);
  EXPECT_EQ(TakeNodeSample(Sources(&broken)).nvml, "NVML loaded but not usable: nvmlInit_v2 failed: Driver Not Loaded");

  GpuSnapshot two;
  two.state = "ok";
  two.version = "NVML 12.570.86.15, driver 570.86.15";
  two.gpus.resize(2);
  two.gpus[1].index = 1;
  two.gpus[1].power_watts = 412.5;
  FakeGpus gpus(two);
  NodeSample s = TakeNodeSample(Sources(&gpus));
  EXPECT_EQ(s.nvml, "NVML 12.570.86.15, driver 570.86.15: 2 GPUs");
  ASSERT_EQ(s.gpus.size(), 2u);
  EXPECT_EQ(s.gpus[1].power_watts, 412.5);

  GpuSnapshot lost = two;
  lost.gpus.resize(1);
  lost.detail = "GPU 0: nvmlDeviceGetTemperature failed: GPU is lost";
  FakeGpus one(lost);
  EXPECT_EQ(TakeNodeSample(Sources(&one)).nvml,
            "NVML 12.570.86.15, driver 570.86.15: 1 GPU; GPU 0: nvmlDeviceGetTemperature failed: GPU is lost");
}

TEST(NodeSampleToJson, TheDocumentedShape) {
  NodeSample s;
  s.numa.push_back({0, 4096, 1024, 2048});
  s.numa.push_back({1, 8192, 10, 20});
  s.shm = ShmSpace{"/dev/shm", 1000, 900, 100};
  s.nvml = "NVML not present";
  EXPECT_EQ(NodeSampleToJson(s, false),
            R"({"numa":[{"node":0,"mem_total_bytes":4096,"mem_free_bytes":1024,"mem_available_bytes":2048},)"
            R"({"node":1,"mem_total_bytes":8192,"mem_free_bytes":10,"mem_available_bytes":20}],)"
            R"("shm":{"path":"/dev/shm","size_bytes":1000,"free_bytes":900,"used_bytes":100},)"
            R"("gpus":[],"nvml":"NVML not present","notes":[]})");
  const GpuSample g = test::FullGpu(3);
  GpuSample bare;
  bare.index = 4;
  s.gpus = {g, bare};
  const std::string json = NodeSampleToJson(s, false);
  EXPECT_NE(json.find(R"("gpus":[{"index":3,"uuid":"GPU-00000003-aaaa-bbbb-cccc-dddddddddddd","name":"NVIDIA H200",)"
                      R"("power_watts":312.5,"energy_joules":123456789.125,"temperature_celsius":41,)"
                      R"("sm_clock_mhz":1980,"memory_clock_mhz":3201,)"
                      R"("gpu_utilization_percent":97,"memory_utilization_percent":35,)"
                      R"("memory_used_bytes":128849018880,"memory_total_bytes":151397597184,)"
                      R"("ecc_uncorrected_errors":0,"ecc_corrected_errors":3,"xid_events":1},)"
                      R"({"index":4,"uuid":"","name":"","power_watts":null,"energy_joules":null,)"
                      R"("temperature_celsius":null,"sm_clock_mhz":null,"memory_clock_mhz":null,)"
                      R"("gpu_utilization_percent":null,"memory_utilization_percent":null,)"
                      R"("memory_used_bytes":null,"memory_total_bytes":null,"ecc_uncorrected_errors":null,)"
                      R"("ecc_corrected_errors":null,"xid_events":null}],)"),
            std::string::npos)
      << json;
  s.shm.reset();
  s.notes = {"shm unknown: \"quoted\""};
  rapidjson::Document d;
  d.Parse(NodeSampleToJson(s, true).c_str());
  ASSERT_FALSE(d.HasParseError());
  EXPECT_TRUE(d["shm"].IsNull());
  EXPECT_STREQ(d["notes"][0].GetString(), "shm unknown: \"quoted\"");
}

TEST(NodeSampleOfThisMachine, HasEveryNodeSysfsLists) {
  const NodeSample s = TakeNodeSample(NodeSampleSources{});
  size_t nodes = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/sys/devices/system/node", ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("node", 0) == 0 && name.size() > 4 && std::isdigit(static_cast<unsigned char>(name[4]))) ++nodes;
  }
  if (nodes == 0) GTEST_SKIP() << "no NUMA nodes in sysfs here";
  EXPECT_EQ(s.numa.size(), nodes);
  EXPECT_THAT(s.notes, IsEmpty());
  for (const NumaMemory& n : s.numa) {
    EXPECT_GT(n.total_bytes, 0u);
    EXPECT_LE(n.free_bytes, n.available_bytes);
    EXPECT_LE(n.available_bytes, n.total_bytes);
  }
}

}  // namespace
}  // namespace ix
