// The topology as data: id lists, byte counts, what hwloc makes of the XML
// fixtures and of this machine, and the JSON and summary renderings.
#include "core/node/topology.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/node/topology_fixtures.h"
#include "tests/support/test.h"

namespace ix {
namespace {

using test::kGiB;
using test::kHgxBusIds;
using test::kTiB;
using test::kTopologyFixtures;
using test::LoadFixture;

std::vector<std::string> BusIds(const Topology& t) {
  std::vector<std::string> out;
  for (const Gpu& g : t.gpus) out.push_back(g.bus_id);
  return out;
}

std::vector<int> GpuNodes(const Topology& t) {
  std::vector<int> out;
  for (const Gpu& g : t.gpus) out.push_back(g.numa.value_or(-1));
  return out;
}

// ---- id lists and bytes ----

TEST(IdList, ParsesTheKernelListSyntax) {
  EXPECT_EQ(ParseIdList("0-3,8,10-11", "x").value(), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(ParseIdList("5", "x").value(), std::vector<int>{5});
  EXPECT_EQ(ParseIdList(" 3,1,1-2\n", "x").value(), (std::vector<int>{1, 2, 3}));
  EXPECT_TRUE(ParseIdList("", "x").value().empty());
  EXPECT_TRUE(ParseIdList("\n", "x").value().empty());
  for (const char* bad : {"a", "1-", "-1", "3-1", "1,,2", "1;2", "0x3", "1 2"}) {
    Result<std::vector<int>> r = ParseIdList(bad, "Cpus_allowed_list");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message.find("Cpus_allowed_list: "), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find("expected a list like 0-3,8,10-11"), std::string::npos) << r.error().message;
  }
}

TEST(IdList, ParsesOneId) {
  EXPECT_EQ(ParseId("0"), 0);
  EXPECT_EQ(ParseId("123456789"), 123456789);
  for (const char* bad : {"", "1234567890", "-1", "+1", " 1", "0x3", "1a"}) EXPECT_FALSE(ParseId(bad)) << bad;
}

TEST(IdList, FormatsRanges) {
  EXPECT_EQ(FormatIdList({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(FormatIdList({3, 1, 2, 2}), "1-3");
  EXPECT_EQ(FormatIdList({7}), "7");
  EXPECT_EQ(FormatIdList({}), "");
  EXPECT_EQ(FormatIdList(ParseIdList("0-63,128-191", "x").value()), "0-63,128-191");
}

TEST(FormatBytes, WholeGibAndTruncatedFractions) {
  EXPECT_EQ(FormatBytes(756 * kGiB), "756 GiB");
  EXPECT_EQ(FormatBytes(4 * kTiB), "4096 GiB");
  EXPECT_EQ(FormatBytes(610 * kGiB + kGiB / 4), "610.25 GiB");
  EXPECT_EQ(FormatBytes(611 * kGiB - 1), "610.99 GiB");  // never rounded up
  EXPECT_EQ(FormatBytes(64ull << 20), "64 MiB");
  EXPECT_EQ(FormatBytes(8192 * 1024), "8 MiB");
  EXPECT_EQ(FormatBytes(512), "512 bytes");
}

// ---- fixtures ----

// Exported with lstopo on a real H200 host (a one-GPU Firecracker VM of the
// device pool, 2026-12-02), where NVML confirmed the order: the GPU is found
// from hwloc's real PCI tree, not from a hand-written one.
TEST(Topology, RealH200HostExport) {
  const Topology t = LoadFixture("h200-vm-real.xml");
  ASSERT_EQ(t.gpus.size(), 1u);
  EXPECT_EQ(t.gpus[0].bus_id, "0000:00:06.0");
  EXPECT_EQ(t.gpus[0].vendor_id, 0x10de);
  EXPECT_EQ(t.gpus[0].device_id, 0x2335);
  EXPECT_EQ(t.gpus[0].class_id, 0x0302);
  EXPECT_EQ(t.gpus[0].numa, 0);
  EXPECT_EQ(t.NumaNodesWithCpus(), std::vector<int>{0});
  EXPECT_EQ(t.cores.size(), 16u);
}

TEST(Topology, Hgx2TibHasEightGpusInBusOrderOnTwoSockets) {
  const Topology t = LoadFixture("hgx-b300-2tib.xml");
  ASSERT_EQ(t.numa_nodes.size(), 2u);
  EXPECT_EQ(t.NumaNodesWithCpus(), (std::vector<int>{0, 1}));
  for (int n = 0; n < 2; ++n) {
    EXPECT_EQ(t.numa_nodes[n].os_index, n);
    EXPECT_EQ(t.numa_nodes[n].total_bytes, 2 * kTiB);
    EXPECT_FALSE(t.numa_nodes[n].free_bytes.has_value());
    EXPECT_EQ(t.numa_nodes[n].cores, 64);
  }
  EXPECT_EQ(FormatIdList(t.numa_nodes[0].cpus), "0-63");
  EXPECT_EQ(FormatIdList(t.numa_nodes[1].cpus), "64-127");
  ASSERT_EQ(t.cores.size(), 128u);
  EXPECT_EQ(t.cores[0].package, 0);
  EXPECT_EQ(t.cores[0].numa, 0);
  EXPECT_EQ(t.cores[127].package, 1);
  EXPECT_EQ(t.cores[127].numa, 1);
  EXPECT_EQ(t.cores[127].cpus, std::vector<int>{127});
  // The ConnectX NIC and the NVSwitch are not GPUs.
  EXPECT_EQ(BusIds(t), kHgxBusIds);
  EXPECT_EQ(GpuNodes(t), (std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1}));
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(t.gpus[i].index, i);
    EXPECT_EQ(t.gpus[i].vendor_id, 0x10de);
    EXPECT_EQ(t.gpus[i].class_id, 0x0302);
    EXPECT_EQ(t.gpus[i].local_numa, std::vector<int>{i < 4 ? 0 : 1});
  }
  EXPECT_EQ(t.source, kTopologyFixtures + "hgx-b300-2tib.xml");
  EXPECT_EQ(t.DescribeGpus(), "0-7");
}

TEST(Topology, Hgx4TibHasFourTibPerNode) {
  const Topology t = LoadFixture("hgx-b300-4tib.xml");
  ASSERT_EQ(t.numa_nodes.size(), 2u);
  EXPECT_EQ(t.numa_nodes[0].total_bytes, 4 * kTiB);
  EXPECT_EQ(t.numa_nodes[1].total_bytes, 4 * kTiB);
  EXPECT_EQ(BusIds(t), kHgxBusIds);
  EXPECT_EQ(GpuNodes(t), (std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1}));
}

TEST(Topology, SubNumaClusteringHasFourNodesWithCpus) {
  const Topology t = LoadFixture("hgx-b300-snc.xml");
  EXPECT_EQ(t.NumaNodesWithCpus(), (std::vector<int>{0, 1, 2, 3}));
  for (const NumaNode& n : t.numa_nodes) {
    EXPECT_EQ(n.cores, 32) << n.os_index;
    EXPECT_EQ(n.total_bytes, kTiB);
  }
  EXPECT_EQ(FormatIdList(t.numa_nodes[1].cpus), "32-63");
  EXPECT_EQ(FormatIdList(t.numa_nodes[3].cpus), "96-127");
  EXPECT_EQ(t.cores[40].numa, 1);
  EXPECT_EQ(t.cores[40].package, 0);
  EXPECT_EQ(t.cores[70].numa, 2);
  EXPECT_EQ(t.cores[70].package, 1);
  EXPECT_EQ(BusIds(t), kHgxBusIds);
  EXPECT_EQ(GpuNodes(t), (std::vector<int>{0, 0, 1, 1, 2, 2, 3, 3}));
}

TEST(Topology, GpusAreSortedByBusIdNotDocumentOrder) {
  const Topology t = LoadFixture("small-unsorted.xml");
  EXPECT_EQ(BusIds(t), (std::vector<std::string>{"0000:21:00.0", "0000:41:00.0", "0000:81:00.0"}));
  EXPECT_EQ(GpuNodes(t), (std::vector<int>{1, -1, 0}));
  // Hanging off the machine: local to every node with CPUs, so no single one.
  EXPECT_EQ(t.gpus[1].local_numa, (std::vector<int>{0, 1}));
  // NUMA node 2 is CPU-less memory: listed, not a placement target.
  ASSERT_EQ(t.numa_nodes.size(), 3u);
  EXPECT_FALSE(t.numa_nodes[2].HasCpus());
  EXPECT_EQ(t.numa_nodes[2].total_bytes, 256 * kGiB);
  EXPECT_EQ(t.NumaNodesWithCpus(), (std::vector<int>{0, 1}));
  EXPECT_EQ(t.cores.size(), 4u);
}

TEST(Topology, HardwareThreadsBelongToTheirCore) {
  const Topology t = LoadFixture("smt-2x4x2.xml");
  ASSERT_EQ(t.cores.size(), 8u);
  EXPECT_EQ(t.cores[0].cpus, (std::vector<int>{0, 8}));
  EXPECT_EQ(t.cores[7].cpus, (std::vector<int>{7, 15}));
  EXPECT_EQ(t.cores[7].numa, 1);
  EXPECT_EQ(FormatIdList(t.numa_nodes[0].cpus), "0-3,8-11");
  EXPECT_EQ(t.numa_nodes[0].cores, 4);
  EXPECT_EQ(t.AllCpus().size(), 16u);
  EXPECT_EQ(GpuNodes(t), (std::vector<int>{0, 0, 1}));
}

// The number of NVIDIA display/3D PCI functions sysfs lists.
int SysfsNvidiaGpus() {
  int n = 0;
  std::error_code ec;
  for (const auto& d : std::filesystem::directory_iterator("/sys/bus/pci/devices", ec)) {
    std::ifstream vendor(d.path() / "vendor"), cls(d.path() / "class");
    std::string v, c;
    vendor >> v;
    cls >> c;
    if (v == "0x10de" && (c.rfind("0x0302", 0) == 0 || c.rfind("0x0300", 0) == 0)) ++n;
  }
  return n;
}

TEST(Topology, LiveDiscoveryOfThisMachine) {
  Result<Topology> r = DiscoverTopology();
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Topology& t = r.value();
  EXPECT_EQ(t.source, "this machine");
  EXPECT_GE(t.NumaNodesWithCpus().size(), 1u);
  EXPECT_EQ(static_cast<long>(t.AllCpus().size()), sysconf(_SC_NPROCESSORS_CONF));
  EXPECT_GE(t.cores.size(), 1u);
  EXPECT_EQ(static_cast<int>(t.gpus.size()), SysfsNvidiaGpus());
  for (const NumaNode& n : t.numa_nodes) EXPECT_GT(n.total_bytes, 0u);
  std::printf("%s", TopologySummary(t, nullptr).c_str());
}

TEST(Topology, MalformedMissingAndEmptyXmlNameTheFile) {
  test::TempDir dir("ix-topology-test");
  const std::string bad = test::WriteTestFile(dir.path(), "broken.xml", "<?xml version=\"1.0\"?>\n<topology version=\"2.0\">\n  <object type=");
  Result<Topology> r = LoadTopologyXml(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message.rfind(bad + ": not a valid hwloc topology XML", 0), 0u) << r.error().message;

  const std::string text = test::WriteTestFile(dir.path(), "text.xml", "this is not XML\n");
  r = LoadTopologyXml(text);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find(text + ": not a valid hwloc topology XML"), std::string::npos);

  r = LoadTopologyXml(dir.path() + "/absent.xml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, dir.path() + "/absent.xml: cannot read topology XML: No such file or directory");

  r = LoadTopologyXml(test::WriteTestFile(dir.path(), "empty.xml", ""));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, dir.path() + "/empty.xml: file is empty, expected an hwloc topology XML");
}

TEST(Topology, SetNumaFreeBytes) {
  Topology t = LoadFixture("hgx-b300-2tib.xml");
  ASSERT_TRUE(SetNumaFreeBytes(t, 1, 100 * kGiB).ok());
  EXPECT_EQ(t.FindNuma(1)->free_bytes, 100 * kGiB);
  Status s = SetNumaFreeBytes(t, 5, kGiB);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("NUMA node 5 is not in the topology"), std::string::npos);
  EXPECT_NE(s.error().message.find("nodes present: 0-1"), std::string::npos);
}

// ---- rendering ----

TEST(Topology, JsonAndSummary) {
  Topology t = LoadFixture("small-unsorted.xml");
  ASSERT_TRUE(SetNumaFreeBytes(t, 0, 60 * kGiB).ok());
  HostState h;
  h.allowed_cpus = {0, 1, 2};
  h.shm_free_bytes = 64ull << 20;
  h.memlock = MemlockLimit{true, 0};
  const std::string json = TopologyToJson(t, &h, false);
  rapidjson::Document d;
  d.Parse(json.c_str());
  ASSERT_FALSE(d.HasParseError()) << json;
  ASSERT_EQ(d["numa_nodes"].Size(), 3u);
  EXPECT_EQ(d["numa_nodes"][0]["free_bytes"].GetUint64(), 60 * kGiB);
  EXPECT_TRUE(d["numa_nodes"][1]["free_bytes"].IsNull());
  EXPECT_STREQ(d["numa_nodes"][1]["cpus"].GetString(), "2-3");
  EXPECT_FALSE(d["numa_nodes"][2]["placement_target"].GetBool());
  ASSERT_EQ(d["gpus"].Size(), 3u);
  EXPECT_STREQ(d["gpus"][0]["bus_id"].GetString(), "0000:21:00.0");
  EXPECT_STREQ(d["gpus"][0]["pci_id"].GetString(), "10de:2901");
  EXPECT_EQ(d["gpus"][0]["numa"].GetInt(), 1);
  EXPECT_TRUE(d["gpus"][1]["numa"].IsNull());
  EXPECT_EQ(d["cores"].Size(), 4u);
  EXPECT_STREQ(d["host"]["allowed_cpus"].GetString(), "0-2");
  EXPECT_STREQ(d["host"]["memlock"].GetString(), "unlimited");
  EXPECT_EQ(d["host"]["shm_free_bytes"].GetUint64(), 64ull << 20);
  EXPECT_EQ(TopologyToJson(t, nullptr, true).find("\"host\""), std::string::npos);

  const std::string s = TopologySummary(t, &h);
  EXPECT_NE(s.find("NUMA 0: 64 GiB total, 60 GiB available; CPUs 0-1 (2 cores)"), std::string::npos) << s;
  EXPECT_NE(s.find("NUMA 2: 256 GiB total, available not measured; no CPUs (not a placement target)"),
            std::string::npos) << s;
  EXPECT_NE(s.find("GPU 1: 0000:41:00.0 [10de:2901] NUMA unknown (local to nodes 0-1)"), std::string::npos) << s;
  EXPECT_NE(s.find("/dev/shm 64 MiB free; RLIMIT_MEMLOCK unlimited"), std::string::npos) << s;
}

}  // namespace
}  // namespace ix
