// The OS behind HostProbe: per-node meminfo, the system probe (on files a
// test writes and on this machine), and the CPUs and nodes read from sysfs.
#include "core/node/topology.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/node/topology_fixtures.h"
#include "tests/support/test.h"

namespace ix {
namespace {

using test::kGiB;
using test::LoadFixture;

// ---- host probe ----

TEST(HostProbe, ParsesPerNodeMeminfoAsMemFreePlusInactiveFile) {
  const char kText[] =
      "Node 0 MemTotal:        4679400 kB\n"
      "Node 0 MemFree:         4099616 kB\n"
      "Node 0 Active(file):     164224 kB\n"
      "Node 0 Inactive(file):   204580 kB\n"
      "Node 0 HugePages_Total:     0\n";
  Result<uint64_t> r = ParseNodeMeminfo(kText, "meminfo");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value(), (4099616ull + 204580ull) * 1024);
  // /proc/meminfo has the same fields without "Node N".
  EXPECT_EQ(ParseNodeMeminfo("MemFree: 10 kB\nInactive(file): 5 kB\n", "m").value(), 15u * 1024);
  EXPECT_EQ(ParseNodeMeminfo("Node 0 MemTotal: 1 kB\n", "f").error().message, "f: no MemFree line");
  EXPECT_EQ(ParseNodeMeminfo("Node 0 MemFree: 1 kB\n", "f").error().message, "f: no Inactive(file) line");
  EXPECT_NE(ParseNodeMeminfo("Node 0 MemFree: lots kB\n", "f").error().message.find("expected a number of kB"),
            std::string::npos);
}

TEST(HostProbe, SystemProbeReadsNodeFilesFromItsDirectory) {
  test::TempDir dir("ix-topology-test");
  test::WriteTestFile(dir.path(), "node1/meminfo", "Node 1 MemFree: 1048576 kB\nNode 1 Inactive(file): 1048576 kB\n");
  auto probe = MakeSystemHostProbe(dir.path(), dir.path());
  EXPECT_EQ(probe->NumaAvailableBytes(1).value(), 2 * kGiB);
  Result<uint64_t> missing = probe->NumaAvailableBytes(0);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message, dir.path() + "/node0/meminfo: cannot read: No such file or directory");

  Topology t = LoadFixture("small-unsorted.xml");
  MeasureFreeMemory(t, *probe);
  EXPECT_EQ(t.FindNuma(1)->free_bytes, 2 * kGiB);
  EXPECT_FALSE(t.FindNuma(0)->free_bytes.has_value());
  ASSERT_EQ(t.notes.size(), 2u);  // nodes 0 and 2
  EXPECT_NE(t.notes[0].find("free memory of NUMA node 0 unknown"), std::string::npos);
}

TEST(HostProbe, TheRealOneOnThisMachine) {
  auto probe = MakeSystemHostProbe();
  Result<std::vector<int>> cpus = probe->AllowedCpus();
  ASSERT_TRUE(cpus.ok()) << cpus.error().message;
  EXPECT_FALSE(cpus.value().empty());
  EXPECT_TRUE(probe->ShmFreeBytes().ok());
  EXPECT_TRUE(probe->Memlock().ok());
  Result<Topology> t = DiscoverTopology();
  ASSERT_TRUE(t.ok());
  MeasureFreeMemory(t.value(), *probe);
  for (int n : t.value().NumaNodesWithCpus()) {
    ASSERT_TRUE(t.value().FindNuma(n)->free_bytes.has_value()) << n;
    EXPECT_LE(*t.value().FindNuma(n)->free_bytes, t.value().FindNuma(n)->total_bytes);
  }
  const HostState h = ReadHostState(*probe);
  EXPECT_EQ(h.allowed_cpus, cpus.value());
  EXPECT_TRUE(h.shm_free_bytes.has_value());
  EXPECT_TRUE(h.memlock.has_value());
  EXPECT_TRUE(h.notes.empty());
  const std::string bad_shm = MakeSystemHostProbe("/nonexistent", "/nonexistent/shm")->ShmFreeBytes().error().message;
  EXPECT_EQ(bad_shm, "statvfs /nonexistent/shm: No such file or directory");
}


// A sysfs tree written by the test: nodes 0 and 1, or only cpu/online.
TEST(DiscoverCpusAndNodes, ReadsNodesFromSysfsAndFallsBackToOnlineCpus) {
  test::TempDir tmp("ix-sysfs-test");
  const std::string dir = tmp.path() + "/sys";
  std::filesystem::create_directories(dir + "/node/node1");
  std::filesystem::create_directories(dir + "/node/node0");
  std::filesystem::create_directories(dir + "/node/power");  // not a node
  std::filesystem::create_directories(dir + "/cpu");
  std::ofstream(dir + "/node/node0/cpulist") << "0-3,8-11\n";
  std::ofstream(dir + "/node/node1/cpulist") << "4-7,12-15\n";
  std::ofstream(dir + "/cpu/online") << "0-15\n";
  Result<Topology> t = DiscoverCpusAndNodes(dir);
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t.value().numa_nodes.size(), 2u);
  EXPECT_EQ(t.value().numa_nodes[0].os_index, 0);
  EXPECT_EQ(t.value().numa_nodes[1].cpus, (std::vector<int>{4, 5, 6, 7, 12, 13, 14, 15}));
  EXPECT_EQ(FormatIdList(t.value().AllCpus()), "0-15");

  std::filesystem::remove_all(dir + "/node");
  t = DiscoverCpusAndNodes(dir);
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t.value().numa_nodes.size(), 1u);
  EXPECT_EQ(FormatIdList(t.value().numa_nodes[0].cpus), "0-15");

  std::filesystem::remove_all(dir);
  t = DiscoverCpusAndNodes(dir);
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("/cpu/online"), std::string::npos) << t.error().message;
}

// On this machine the cheap discovery agrees with hwloc about CPUs and nodes.
TEST(DiscoverCpusAndNodes, AgreesWithHwlocHere) {
  Result<Topology> fast = DiscoverCpusAndNodes();
  Result<Topology> full = DiscoverTopology();
  ASSERT_TRUE(fast) << fast.error().message;
  ASSERT_TRUE(full) << full.error().message;
  EXPECT_EQ(fast.value().AllCpus(), full.value().AllCpus());
  EXPECT_EQ(fast.value().NumaNodesWithCpus(), full.value().NumaNodesWithCpus());
}

}  // namespace
}  // namespace ix
