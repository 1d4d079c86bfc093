#include "core/node/topology.h"
#include "core/node/topology_json.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace ix {
namespace {

const std::string kFixtures = IX_SOURCE_DIR "/tests/fixtures/topology/";
constexpr uint64_t kGiB = 1ull << 30;
constexpr uint64_t kTiB = 1ull << 40;

Topology Load(const std::string& name) {
  Result<Topology> t = LoadTopologyXml(kFixtures + name);
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
  return t.ok() ? std::move(t).value() : Topology{};
}

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

const std::vector<std::string> kHgxBusIds = {"0000:1b:00.0", "0000:43:00.0", "0000:52:00.0", "0000:61:00.0",
                                             "0000:9d:00.0", "0000:c3:00.0", "0000:d1:00.0", "0000:df:00.0"};

// A temporary directory removed at the end of the test.
struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/ix-topology-test-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string Write(const std::string& name, const std::string& text) const {
    const std::string p = path + "/" + name;
    std::filesystem::create_directories(std::filesystem::path(p).parent_path());
    std::ofstream(p) << text;
    return p;
  }
  std::string path;
};

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
  const Topology t = Load("h200-vm-real.xml");
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
  const Topology t = Load("hgx-b300-2tib.xml");
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
  EXPECT_EQ(t.source, kFixtures + "hgx-b300-2tib.xml");
  EXPECT_EQ(t.DescribeGpus(), "0-7");
}

TEST(Topology, Hgx4TibHasFourTibPerNode) {
  const Topology t = Load("hgx-b300-4tib.xml");
  ASSERT_EQ(t.numa_nodes.size(), 2u);
  EXPECT_EQ(t.numa_nodes[0].total_bytes, 4 * kTiB);
  EXPECT_EQ(t.numa_nodes[1].total_bytes, 4 * kTiB);
  EXPECT_EQ(BusIds(t), kHgxBusIds);
  EXPECT_EQ(GpuNodes(t), (std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1}));
}

TEST(Topology, SubNumaClusteringHasFourNodesWithCpus) {
  const Topology t = Load("hgx-b300-snc.xml");
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
  const Topology t = Load("small-unsorted.xml");
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
  const Topology t = Load("smt-2x4x2.xml");
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
  TempDir dir;
  const std::string bad = dir.Write("broken.xml", "<?xml version=\"1.0\"?>\n<topology version=\"2.0\">\n  <object type=");
  Result<Topology> r = LoadTopologyXml(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message.rfind(bad + ": not a valid hwloc topology XML", 0), 0u) << r.error().message;

  const std::string text = dir.Write("text.xml", "this is not XML\n");
  r = LoadTopologyXml(text);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find(text + ": not a valid hwloc topology XML"), std::string::npos);

  r = LoadTopologyXml(dir.path + "/absent.xml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, dir.path + "/absent.xml: cannot read topology XML: No such file or directory");

  r = LoadTopologyXml(dir.Write("empty.xml", ""));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, dir.path + "/empty.xml: file is empty, expected an hwloc topology XML");
}

TEST(Topology, SetNumaFreeBytes) {
  Topology t = Load("hgx-b300-2tib.xml");
  ASSERT_TRUE(SetNumaFreeBytes(t, 1, 100 * kGiB).ok());
  EXPECT_EQ(t.FindNuma(1)->free_bytes, 100 * kGiB);
  Status s = SetNumaFreeBytes(t, 5, kGiB);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("NUMA node 5 is not in the topology"), std::string::npos);
  EXPECT_NE(s.error().message.find("nodes present: 0-1"), std::string::npos);
}

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
  TempDir dir;
  dir.Write("node1/meminfo", "Node 1 MemFree: 1048576 kB\nNode 1 Inactive(file): 1048576 kB\n");
  auto probe = MakeSystemHostProbe(dir.path, dir.path);
  EXPECT_EQ(probe->NumaAvailableBytes(1).value(), 2 * kGiB);
  Result<uint64_t> missing = probe->NumaAvailableBytes(0);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message, dir.path + "/node0/meminfo: cannot read: No such file or directory");

  Topology t = Load("small-unsorted.xml");
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
  const Topology t = Load("hgx-b300-2tib.xml");
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
  const Topology t = Load("hgx-b300-2tib.xml");
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
  const Topology t = Load("hgx-b300-2tib.xml");
  Result<StepGpus> s = SelectStepGpus(t, std::nullopt, std::string("0,9"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, "GPU 9 (from CUDA_VISIBLE_DEVICES=0,9) is not in the topology of " + kFixtures +
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

// ---- rendering ----

TEST(Topology, JsonAndSummary) {
  Topology t = Load("small-unsorted.xml");
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

namespace ix {
namespace {

// A sysfs tree written by the test: nodes 0 and 1, or only cpu/online.
TEST(DiscoverCpusAndNodes, ReadsNodesFromSysfsAndFallsBackToOnlineCpus) {
  const std::string dir = ::testing::TempDir() + "/sysfs-" + std::to_string(::getpid());
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

namespace ix {
namespace {

// Everything but `source`, compared through the lossless cache format.
std::string Facts(Topology t) {
  t.source.clear();
  return TopologyToCacheJson(t);
}

// The files in `dir`, by name.
std::vector<std::string> Files(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// Replaces a cache file's topology with `t`, keeping its name and mode, so a
// load that returns `t` came from the cache.
void Plant(const std::string& path, const Topology& t) {
  std::ofstream(path, std::ios::trunc) << TopologyToCacheJson(t);
}

// The second discovery reads the first one's JSON, and both agree.
TEST(DiscoverTopologyCached, WritesOnceThenLoadsTheSameMachine) {
  TempDir dir;
  Result<Topology> first = DiscoverTopologyCached(dir.path);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first.value().source, "this machine");
  const std::vector<std::string> files = Files(dir.path);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].rfind("topology-", 0), 0u) << files[0];
  EXPECT_EQ(files[0].size() - files[0].rfind(".json"), 5u) << files[0];
  const std::string cache = dir.path + "/" + files[0];
  EXPECT_EQ(std::filesystem::status(cache).permissions(), std::filesystem::perms(0644));
  Result<Topology> second = DiscoverTopologyCached(dir.path);
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(second.value().source, "this machine (cached in " + cache + ")");
  EXPECT_EQ(Facts(second.value()), Facts(first.value()));

  // It really is read: a planted topology comes back.
  Topology planted = Load("smt-2x4x2.xml");
  Plant(cache, planted);
  Result<Topology> third = DiscoverTopologyCached(dir.path);
  ASSERT_TRUE(third) << third.error().message;
  EXPECT_EQ(Facts(third.value()), Facts(planted));

  // A cache file others may write is not trusted, and is rewritten.
  std::filesystem::permissions(cache, std::filesystem::perms::others_write, std::filesystem::perm_options::add);
  Result<Topology> fourth = DiscoverTopologyCached(dir.path);
  ASSERT_TRUE(fourth) << fourth.error().message;
  EXPECT_EQ(fourth.value().source, "this machine");
  EXPECT_EQ(Facts(fourth.value()), Facts(first.value()));
  EXPECT_EQ(std::filesystem::status(cache).permissions(), std::filesystem::perms(0644));
  EXPECT_EQ(Files(dir.path), files);  // no temporary left behind

  // Nor is a link, or a file that does not parse.
  Plant(dir.path + "/elsewhere.json", planted);
  std::filesystem::remove(cache);
  std::filesystem::create_symlink(dir.path + "/elsewhere.json", cache);
  Result<Topology> fifth = DiscoverTopologyCached(dir.path);
  ASSERT_TRUE(fifth) << fifth.error().message;
  EXPECT_EQ(fifth.value().source, "this machine");
  EXPECT_FALSE(std::filesystem::is_symlink(cache));
  dir.Write(files[0], "{\"format\":\"ix-topology\",\"version\":1,");
  Result<Topology> sixth = DiscoverTopologyCached(dir.path);
  ASSERT_TRUE(sixth) << sixth.error().message;
  EXPECT_EQ(sixth.value().source, "this machine");
  EXPECT_EQ(Facts(sixth.value()), Facts(first.value()));

  // Without a directory there is no cache.
  Result<Topology> uncached = DiscoverTopologyCached("");
  ASSERT_TRUE(uncached) << uncached.error().message;
  EXPECT_EQ(uncached.value().source, "this machine");
}

// ---- LoadTopologyXmlCached ----

// A copy of a fixture to edit, and a cache directory.
struct XmlCase {
  TempDir dir;
  std::string xml = dir.path + "/node.xml";
  std::string cache = dir.path + "/cache";
  explicit XmlCase(const std::string& fixture) {
    std::filesystem::copy_file(kFixtures + fixture, xml);
    std::filesystem::create_directories(cache);
  }
};

void ExpectSameAsUncached(const Result<Topology>& cached, const std::string& xml) {
  Result<Topology> plain = LoadTopologyXml(xml);
  ASSERT_EQ(cached.ok(), plain.ok());
  if (!plain) {
    EXPECT_EQ(cached.error().message, plain.error().message);
    return;
  }
  EXPECT_EQ(cached.value().source, plain.value().source);
  EXPECT_EQ(Facts(cached.value()), Facts(plain.value()));
}

TEST(LoadTopologyXmlCached, HitGivesWhatTheXmlGives) {
  XmlCase c("hgx-b300-2tib.xml");
  Result<Topology> first = LoadTopologyXmlCached(c.xml, c.cache);
  ExpectSameAsUncached(first, c.xml);
  const std::vector<std::string> files = Files(c.cache);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].rfind("topology-xml-", 0), 0u) << files[0];
  Result<Topology> second = LoadTopologyXmlCached(c.xml, c.cache);
  ExpectSameAsUncached(second, c.xml);
  // Another path to the same file gets its own path as the source.
  const std::string link = c.dir.path + "/link.xml";
  std::filesystem::create_symlink(c.xml, link);
  ExpectSameAsUncached(LoadTopologyXmlCached(link, c.cache), link);
  EXPECT_EQ(Files(c.cache), files);

  // The hit is the cache: a planted topology comes back.
  Topology planted = Load("smt-2x4x2.xml");
  Plant(c.cache + "/" + files[0], planted);
  Result<Topology> third = LoadTopologyXmlCached(c.xml, c.cache);
  ASSERT_TRUE(third) << third.error().message;
  EXPECT_EQ(third.value().source, c.xml);
  EXPECT_EQ(Facts(third.value()), Facts(planted));

  // Without a directory there is no cache.
  ExpectSameAsUncached(LoadTopologyXmlCached(c.xml, ""), c.xml);
}

TEST(LoadTopologyXmlCached, AnEditedXmlIsParsedAgain) {
  XmlCase c("hgx-b300-2tib.xml");
  ASSERT_TRUE(LoadTopologyXmlCached(c.xml, c.cache));
  EXPECT_EQ(LoadTopologyXmlCached(c.xml, c.cache).value().numa_nodes[0].total_bytes, 2 * kTiB);
  // Node 0 made 3 TiB in place: same inode, same size (as many digits), and
  // the old mtime put back, as cp -p would. Only ctime differs.
  const auto mtime = std::filesystem::last_write_time(c.xml);
  const auto size = std::filesystem::file_size(c.xml);
  std::stringstream text;
  text << std::ifstream(c.xml).rdbuf();
  std::string xml = text.str();
  const std::string two = "local_memory=\"2199023255552\"";
  ASSERT_NE(xml.find(two), std::string::npos);
  xml.replace(xml.find(two), two.size(), "local_memory=\"3298534883328\"");
  ::usleep(20000);  // past a tick of the coarse clock file times come from
  std::ofstream(c.xml, std::ios::trunc) << xml;
  std::filesystem::last_write_time(c.xml, mtime);
  ASSERT_EQ(std::filesystem::file_size(c.xml), size);
  Result<Topology> edited = LoadTopologyXmlCached(c.xml, c.cache);
  ExpectSameAsUncached(edited, c.xml);
  ASSERT_TRUE(edited);
  EXPECT_EQ(edited.value().numa_nodes[0].total_bytes, 3 * kTiB);
  EXPECT_EQ(edited.value().numa_nodes[1].total_bytes, 2 * kTiB);
  EXPECT_EQ(Files(c.cache).size(), 2u);
  // Replaced by another file (an editor, rsync).
  const std::string other = c.dir.path + "/other.xml";
  std::filesystem::copy_file(kFixtures + "hgx-b300-snc.xml", other);
  std::filesystem::rename(other, c.xml);
  Result<Topology> replaced = LoadTopologyXmlCached(c.xml, c.cache);
  ExpectSameAsUncached(replaced, c.xml);
  ASSERT_TRUE(replaced);
  EXPECT_EQ(replaced.value().numa_nodes.size(), 4u);
  EXPECT_EQ(Files(c.cache).size(), 3u);
}

TEST(LoadTopologyXmlCached, AnUnsafeCacheFileIsIgnored) {
  XmlCase c("hgx-b300-2tib.xml");
  ASSERT_TRUE(LoadTopologyXmlCached(c.xml, c.cache));
  const std::vector<std::string> files = Files(c.cache);
  ASSERT_EQ(files.size(), 1u);
  const std::string cache = c.cache + "/" + files[0];
  for (auto perm : {std::filesystem::perms::group_write, std::filesystem::perms::others_write}) {
    Plant(cache, Load("smt-2x4x2.xml"));
    std::filesystem::permissions(cache, std::filesystem::perms(0644));
    std::filesystem::permissions(cache, perm, std::filesystem::perm_options::add);
    ExpectSameAsUncached(LoadTopologyXmlCached(c.xml, c.cache), c.xml);
    EXPECT_EQ(std::filesystem::status(cache).permissions(), std::filesystem::perms(0644));  // rewritten
  }
  // A link to a planted file.
  Plant(c.dir.path + "/planted.json", Load("smt-2x4x2.xml"));
  std::filesystem::remove(cache);
  std::filesystem::create_symlink(c.dir.path + "/planted.json", cache);
  ExpectSameAsUncached(LoadTopologyXmlCached(c.xml, c.cache), c.xml);
  EXPECT_FALSE(std::filesystem::is_symlink(cache));
  // A directory in its place: no cache, still the right answer.
  std::filesystem::remove(cache);
  std::filesystem::create_directory(cache);
  ExpectSameAsUncached(LoadTopologyXmlCached(c.xml, c.cache), c.xml);
  ExpectSameAsUncached(LoadTopologyXmlCached(c.xml, c.cache), c.xml);
  // A cache directory that does not exist.
  ExpectSameAsUncached(LoadTopologyXmlCached(c.xml, c.dir.path + "/absent"), c.xml);
}

TEST(LoadTopologyXmlCached, ErrorsAreTheSameAndNeverCached) {
  XmlCase c("hgx-b300-2tib.xml");
  for (const std::string& bad : {std::string("<topology><object"), std::string(""), std::string("not xml")}) {
    std::ofstream(c.xml, std::ios::trunc) << bad;
    Result<Topology> r = LoadTopologyXmlCached(c.xml, c.cache);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().message.find(c.xml), std::string::npos) << r.error().message;
    ExpectSameAsUncached(r, c.xml);
    EXPECT_TRUE(Files(c.cache).empty());
  }
  ExpectSameAsUncached(LoadTopologyXmlCached(c.dir.path + "/absent.xml", c.cache), c.dir.path + "/absent.xml");
  ExpectSameAsUncached(LoadTopologyXmlCached(c.dir.path, c.cache), c.dir.path);  // a directory
  EXPECT_TRUE(Files(c.cache).empty());
}

}  // namespace
}  // namespace ix
