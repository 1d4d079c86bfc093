#include "core/node/placement.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

namespace ix {
namespace {

const std::string kFixtures = IX_SOURCE_DIR "/tests/fixtures/topology/";
constexpr uint64_t kGiB = 1ull << 30;

Topology Load(const std::string& name) {
  Result<Topology> t = LoadTopologyXml(kFixtures + name);
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
  return t.ok() ? std::move(t).value() : Topology{};
}

LaunchPlan Plan(const std::string& arm, int64_t conc = 64) {
  Result<Recipe> recipe = LoadRecipeByName(IX_SOURCE_DIR "/recipes", "dsv41flash-fp4-b300-vllm");
  EXPECT_TRUE(recipe.ok()) << recipe.error().message;
  Result<std::vector<std::string>> names = PortNames(recipe.value(), arm);
  EXPECT_TRUE(names.ok());
  RenderRequest req;
  req.arm = arm;
  req.conc = conc;
  req.ports = PlaceholderPorts(names.value());
  Result<LaunchPlan> plan = RenderPlan(recipe.value(), req);
  EXPECT_TRUE(plan.ok()) << plan.error().message;
  return std::move(plan).value();
}

// The step's GPUs, with a roomy /dev/shm.
PlacementRequest OnGpus(std::vector<int> gpus) {
  PlacementRequest r;
  r.step_gpus = std::move(gpus);
  r.shm_free_bytes = 24 * kGiB;
  return r;
}

Placement Place(const LaunchPlan& plan, const Topology& t, const PlacementRequest& req) {
  Result<Placement> p = PlanPlacement(plan, t, req);
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().message);
  return p.ok() ? std::move(p).value() : Placement{};
}

std::string Cpus(const RankPlacement& r) { return FormatIdList(r.cpus); }

TEST(Placement, Dep4OnGpus0To3FitsOnTheFourTibNode) {
  const Placement p = Place(Plan("dep4"), Load("hgx-b300-4tib.xml"), OnGpus({0, 1, 2, 3}));
  EXPECT_TRUE(p.fits);
  EXPECT_TRUE(p.problems.empty());
  EXPECT_EQ(p.arm, "dep4");
  ASSERT_EQ(p.ranks.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(p.ranks[i].rank, i);
    EXPECT_EQ(p.ranks[i].gpus, std::vector<int>{i});
    EXPECT_EQ(p.ranks[i].numa, 0);
    EXPECT_EQ(p.ranks[i].host_bytes, 189 * kGiB);
  }
  // Node 0's 64 cores, split four ways, disjoint.
  EXPECT_EQ(Cpus(p.ranks[0]), "0-15");
  EXPECT_EQ(Cpus(p.ranks[1]), "16-31");
  EXPECT_EQ(Cpus(p.ranks[2]), "32-47");
  EXPECT_EQ(Cpus(p.ranks[3]), "48-63");
  ASSERT_NE(p.FindNuma(0), nullptr);
  EXPECT_EQ(p.FindNuma(0)->needed_bytes, 756 * kGiB);
  EXPECT_EQ(p.FindNuma(0)->available_bytes, 4096 * kGiB);
  EXPECT_FALSE(p.FindNuma(0)->available_is_free);
  EXPECT_EQ(p.FindNuma(0)->breakdown, "4 ranks x 189 GiB");
  EXPECT_EQ(p.FindNuma(0)->ranks, (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(p.FindNuma(1)->needed_bytes, 0u);
  EXPECT_EQ(p.FindNuma(1)->breakdown, "");
  EXPECT_TRUE(EnforcePlacement(p, PlacementPolicy::kStrict).ok());
}

TEST(Placement, Dep4IsRefusedWhenNuma0HasTooLittleFree) {
  Topology t = Load("hgx-b300-4tib.xml");
  ASSERT_TRUE(SetNumaFreeBytes(t, 0, 610 * kGiB).ok());
  ASSERT_TRUE(SetNumaFreeBytes(t, 1, 3000 * kGiB).ok());
  const Placement p = Place(Plan("dep4"), t, OnGpus({0, 1, 2, 3}));
  EXPECT_FALSE(p.fits);
  ASSERT_EQ(p.problems.size(), 1u);
  EXPECT_EQ(p.problems[0],
            "dep4 needs 756 GiB on NUMA node 0 (4 ranks x 189 GiB); node 0 has 610 GiB available");
  EXPECT_TRUE(p.FindNuma(0)->available_is_free);
  // The caller chooses: strict refuses with the problem, warn proceeds.
  Status strict = EnforcePlacement(p, PlacementPolicy::kStrict);
  ASSERT_FALSE(strict.ok());
  EXPECT_EQ(strict.error().message, p.problems[0]);
  EXPECT_TRUE(EnforcePlacement(p, PlacementPolicy::kWarn).ok());
  // Placement itself is unchanged by the verdict.
  EXPECT_EQ(p.ranks[3].numa, 0);
}

TEST(Placement, Dep4OnGpus4To7LandsOnNuma1) {
  const Placement p = Place(Plan("dep4"), Load("hgx-b300-2tib.xml"), OnGpus({4, 5, 6, 7}));
  EXPECT_TRUE(p.fits);
  ASSERT_EQ(p.ranks.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(p.ranks[i].gpus, std::vector<int>{4 + i});
    EXPECT_EQ(p.ranks[i].numa, 1);
  }
  EXPECT_EQ(Cpus(p.ranks[0]), "64-79");
  EXPECT_EQ(Cpus(p.ranks[3]), "112-127");
  EXPECT_EQ(p.FindNuma(1)->needed_bytes, 756 * kGiB);
  EXPECT_EQ(p.FindNuma(0)->needed_bytes, 0u);
}

TEST(Placement, Tp4IsOneProcessWithTheCoresOfItsGpusNode) {
  for (const char* arm : {"tp4", "tep4"}) {
    const Placement p = Place(Plan(arm, 8), Load("hgx-b300-2tib.xml"), OnGpus({0, 1, 2, 3}));
    EXPECT_TRUE(p.fits) << arm;
    ASSERT_EQ(p.ranks.size(), 1u);
    EXPECT_EQ(p.ranks[0].gpus, (std::vector<int>{0, 1, 2, 3}));
    EXPECT_EQ(p.ranks[0].numa, 0);
    EXPECT_EQ(Cpus(p.ranks[0]), "0-63");
    EXPECT_EQ(p.FindNuma(0)->needed_bytes, 189 * kGiB);
    EXPECT_EQ(p.FindNuma(0)->breakdown, "1 rank x 189 GiB");
    EXPECT_TRUE(p.notes.empty()) << p.notes[0];
  }
}

TEST(Placement, SubNumaClusteringSpreadsDep4OverTwoNodes) {
  const Placement p = Place(Plan("dep4"), Load("hgx-b300-snc.xml"), OnGpus({0, 1, 2, 3}));
  EXPECT_TRUE(p.fits);
  ASSERT_EQ(p.ranks.size(), 4u);
  EXPECT_EQ(p.ranks[0].numa, 0);
  EXPECT_EQ(p.ranks[1].numa, 0);
  EXPECT_EQ(p.ranks[2].numa, 1);
  EXPECT_EQ(p.ranks[3].numa, 1);
  EXPECT_EQ(Cpus(p.ranks[0]), "0-15");
  EXPECT_EQ(Cpus(p.ranks[1]), "16-31");
  EXPECT_EQ(Cpus(p.ranks[2]), "32-47");
  EXPECT_EQ(Cpus(p.ranks[3]), "48-63");
  std::set<int> all;
  for (const RankPlacement& r : p.ranks) {
    for (int c : r.cpus) EXPECT_TRUE(all.insert(c).second) << "CPU " << c << " given twice";
  }
  EXPECT_EQ(p.FindNuma(0)->needed_bytes, 378 * kGiB);
  EXPECT_EQ(p.FindNuma(0)->breakdown, "2 ranks x 189 GiB");
  EXPECT_EQ(p.FindNuma(1)->needed_bytes, 378 * kGiB);
  EXPECT_EQ(p.FindNuma(2)->needed_bytes, 0u);
  EXPECT_EQ(p.numa.size(), 4u);
}

TEST(Placement, ShmRefusal) {
  PlacementRequest req = OnGpus({0, 1, 2, 3});
  req.shm_free_bytes = 64ull << 20;
  const Placement p = Place(Plan("dep4"), Load("hgx-b300-4tib.xml"), req);
  EXPECT_FALSE(p.fits);
  ASSERT_EQ(p.problems.size(), 1u);
  EXPECT_EQ(p.problems[0], "dep4 needs 1 GiB free in /dev/shm; /dev/shm has 64 MiB free");
  req.shm_free_bytes = 24 * kGiB;
  EXPECT_TRUE(Place(Plan("dep4"), Load("hgx-b300-4tib.xml"), req).fits);
  req.shm_free_bytes.reset();
  const Placement unknown = Place(Plan("dep4"), Load("hgx-b300-4tib.xml"), req);
  EXPECT_TRUE(unknown.fits);
  EXPECT_EQ(unknown.notes, std::vector<std::string>{"/dev/shm free space unknown; not checked"});
}

TEST(Placement, MemlockRefusalWhenPinned) {
  PlacementRequest req = OnGpus({0, 1, 2, 3});
  req.memlock = MemlockLimit{false, 8ull << 20};
  // Not pinned: the limit does not matter.
  EXPECT_TRUE(Place(Plan("dep4"), Load("hgx-b300-4tib.xml"), req).fits);
  req.pinned_memory = true;
  Placement p = Place(Plan("dep4"), Load("hgx-b300-4tib.xml"), req);
  EXPECT_FALSE(p.fits);
  ASSERT_EQ(p.problems.size(), 1u);
  EXPECT_EQ(p.problems[0],
            "dep4 needs RLIMIT_MEMLOCK of at least 189 GiB to pin host memory (per rank process; rank 0 pins the "
            "most); the limit is 8 MiB");
  EXPECT_EQ(p.memlock_needed_bytes, 189 * kGiB);
  req.memlock = MemlockLimit{true, 0};
  EXPECT_TRUE(Place(Plan("dep4"), Load("hgx-b300-4tib.xml"), req).fits);
  req.memlock = MemlockLimit{false, 200 * kGiB};
  EXPECT_TRUE(Place(Plan("dep4"), Load("hgx-b300-4tib.xml"), req).fits);
  // All three problems at once, in a fixed order: memory, /dev/shm, memlock.
  Topology t = Load("hgx-b300-4tib.xml");
  ASSERT_TRUE(SetNumaFreeBytes(t, 0, 610 * kGiB).ok());
  req.memlock = MemlockLimit{false, 64ull << 10};
  req.shm_free_bytes = 1ull << 20;
  p = Place(Plan("dep4"), t, req);
  ASSERT_EQ(p.problems.size(), 3u);
  EXPECT_NE(p.problems[0].find("on NUMA node 0"), std::string::npos);
  EXPECT_NE(p.problems[1].find("/dev/shm has 1 MiB free"), std::string::npos);
  EXPECT_NE(p.problems[2].find("the limit is 65536 bytes"), std::string::npos);
  EXPECT_EQ(EnforcePlacement(p, PlacementPolicy::kStrict).error().message,
            p.problems[0] + "\n" + p.problems[1] + "\n" + p.problems[2]);
}

TEST(Placement, InputsThatCannotDescribeAStepAreErrors) {
  const Topology t = Load("hgx-b300-2tib.xml");
  Result<Placement> r = PlanPlacement(Plan("dep4"), t, OnGpus({0, 1, 2, 9}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "GPU 9 of the step is not in the topology of " + kFixtures +
                                   "hgx-b300-2tib.xml; GPUs present: 0-7");
  r = PlanPlacement(Plan("dep4"), t, OnGpus({0, 1}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "dep4 uses 4 GPUs but the step has 2 (node GPUs 0-1)");
  r = PlanPlacement(Plan("dep4"), t, OnGpus({0, 1, 1, 2}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "GPU 1 is given twice in the step's GPUs");
  PlacementRequest req = OnGpus({0, 1, 2, 3});
  req.safety_factor = 0;
  r = PlanPlacement(Plan("dep4"), t, req);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("safety factor 0 must be a number > 0"), std::string::npos);
  req.safety_factor = 1;
  req.allowed_cpus = {500, 501};
  r = PlanPlacement(Plan("dep4"), t, req);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("none of the step's allowed CPUs (500-501)"), std::string::npos);
}

TEST(Placement, MoreStepGpusThanThePlanUsesIsANote) {
  const Placement p = Place(Plan("tp4", 8), Load("hgx-b300-2tib.xml"), OnGpus({4, 5, 6, 7, 0, 1, 2, 3}));
  EXPECT_EQ(p.ranks[0].gpus, (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(p.ranks[0].numa, 1);
  EXPECT_EQ(p.notes, std::vector<std::string>{"the step has 8 GPUs; tp4 uses the first 4"});
}

TEST(Placement, OnlyAllowedCpusAreShared) {
  PlacementRequest req = OnGpus({0, 1, 2, 3});
  req.allowed_cpus = {0, 1, 2, 3, 4, 5, 6, 7, 64, 65};
  Placement p = Place(Plan("dep4"), Load("hgx-b300-2tib.xml"), req);
  EXPECT_EQ(Cpus(p.ranks[0]), "0-1");
  EXPECT_EQ(Cpus(p.ranks[1]), "2-3");
  EXPECT_EQ(Cpus(p.ranks[2]), "4-5");
  EXPECT_EQ(Cpus(p.ranks[3]), "6-7");
  // Uneven: 6 cores for 4 ranks -> 1, 2, 1, 2; every core used once.
  req.allowed_cpus = {10, 11, 12, 13, 14, 15};
  p = Place(Plan("dep4"), Load("hgx-b300-2tib.xml"), req);
  EXPECT_EQ(Cpus(p.ranks[0]), "10");
  EXPECT_EQ(Cpus(p.ranks[1]), "11-12");
  EXPECT_EQ(Cpus(p.ranks[2]), "13");
  EXPECT_EQ(Cpus(p.ranks[3]), "14-15");
  // Fewer cores than ranks: they share, and say so.
  req.allowed_cpus = {0, 1};
  p = Place(Plan("dep4"), Load("hgx-b300-2tib.xml"), req);
  EXPECT_EQ(Cpus(p.ranks[0]), "0");
  EXPECT_EQ(Cpus(p.ranks[1]), "1");
  EXPECT_EQ(Cpus(p.ranks[2]), "0");
  EXPECT_EQ(Cpus(p.ranks[3]), "1");
  EXPECT_EQ(p.notes, std::vector<std::string>{"NUMA node 0 has 2 allowed cores for 4 ranks; ranks share cores"});
  // None of the GPU node's CPUs allowed: the step's CPUs, not local, noted.
  req.allowed_cpus = {64, 65, 200};
  p = Place(Plan("dep4"), Load("hgx-b300-2tib.xml"), req);
  EXPECT_EQ(Cpus(p.ranks[0]), "64-65");
  EXPECT_EQ(p.ranks[0].numa, 0);  // memory still from the GPUs' node
  ASSERT_EQ(p.notes.size(), 2u);
  EXPECT_EQ(p.notes[0], "allowed CPUs 200 are not in the topology and are ignored");
  EXPECT_EQ(p.notes[1],
            "NUMA node 0 has none of the step's allowed CPUs (64-65); ranks 0-3 run on all of them, not local to "
            "their GPUs");
}

TEST(Placement, SafetyFactorScalesTheNeed) {
  Topology t = Load("hgx-b300-4tib.xml");
  ASSERT_TRUE(SetNumaFreeBytes(t, 0, 800 * kGiB).ok());
  PlacementRequest req = OnGpus({0, 1, 2, 3});
  req.safety_factor = 1.25;
  const Placement p = Place(Plan("dep4"), t, req);
  EXPECT_FALSE(p.fits);
  EXPECT_EQ(p.FindNuma(0)->needed_bytes, 945 * kGiB);
  ASSERT_EQ(p.problems.size(), 1u);
  EXPECT_EQ(p.problems[0],
            "dep4 needs 945 GiB on NUMA node 0 (4 ranks x 189 GiB, safety factor 1.25); node 0 has 800 GiB available");
  req.safety_factor = 1.0;
  EXPECT_TRUE(Place(Plan("dep4"), t, req).fits);
}

TEST(Placement, UnmeasuredFreeMemoryComparesWithTheTotalAndSaysSo) {
  // Free not measured: the need is compared with the node's total.
  const Placement p = Place(Plan("tp4", 8), [] {
    Topology t = Load("hgx-b300-2tib.xml");
    t.FindNuma(0)->total_bytes = 100 * kGiB;
    return t;
  }(), OnGpus({0, 1, 2, 3}));
  ASSERT_EQ(p.problems.size(), 1u);
  EXPECT_EQ(p.problems[0],
            "tp4 needs 189 GiB on NUMA node 0 (1 rank x 189 GiB); node 0 has 100 GiB in total (free memory not "
            "measured)");
}

// A hand-made plan: three single-GPU ranks, 10 GiB per DP rank.
LaunchPlan Dp3() {
  LaunchPlan plan;
  plan.arm = "dep3";
  plan.gpus = 3;
  plan.tp = 1;
  plan.dp = 3;
  for (int64_t i = 0; i < 3; ++i) plan.ranks.push_back(PlannedRank{i, {i}, {}});
  plan.host_memory.push_back(PlannedHostMemory{"tables", HostMemoryNeed::Per::kDpRank, 10 * kGiB, 3, 30 * kGiB});
  return plan;
}

TEST(Placement, AGpuWithoutLocalityGoesToTheNodeWithTheMostMemoryLeft) {
  // GPUs in bus order: 0 on node 1, 1 without locality, 2 on node 0.
  Topology t = Load("small-unsorted.xml");
  ASSERT_TRUE(SetNumaFreeBytes(t, 0, 25 * kGiB).ok());
  ASSERT_TRUE(SetNumaFreeBytes(t, 1, 30 * kGiB).ok());
  Placement p = Place(Dp3(), t, OnGpus({0, 1, 2}));
  // Rank 0 took 10 GiB of node 1 (20 left), so node 0 (25) has the most.
  EXPECT_EQ(p.ranks[0].numa, 1);
  EXPECT_EQ(p.ranks[1].numa, 0);
  EXPECT_EQ(p.ranks[2].numa, 0);
  EXPECT_EQ(p.notes, std::vector<std::string>{"rank 1: GPU 1 (0000:41:00.0) has no single NUMA node (local to "
                                              "nodes 0-1); placed on node 0, the one with the most memory available"});
  EXPECT_EQ(Cpus(p.ranks[1]), "0");
  EXPECT_EQ(Cpus(p.ranks[2]), "1");
  EXPECT_EQ(Cpus(p.ranks[0]), "2-3");
  EXPECT_TRUE(p.fits);
  // The CPU-less node 2 is never a target and not in the demand list.
  EXPECT_EQ(p.FindNuma(2), nullptr);
  ASSERT_TRUE(SetNumaFreeBytes(t, 0, 15 * kGiB).ok());
  p = Place(Dp3(), t, OnGpus({0, 1, 2}));
  EXPECT_EQ(p.ranks[1].numa, 1);
}

TEST(Placement, CoresAreSharedWholeWithTheirHardwareThreads) {
  LaunchPlan plan = Dp3();
  plan.arm = "dep2";
  plan.gpus = 2;
  plan.dp = 2;
  plan.ranks.pop_back();
  const Topology t = Load("smt-2x4x2.xml");
  Placement p = Place(plan, t, OnGpus({0, 1}));
  EXPECT_EQ(Cpus(p.ranks[0]), "0-1,8-9");
  EXPECT_EQ(Cpus(p.ranks[1]), "2-3,10-11");
  // Only some threads allowed: a core counts when any of its threads is.
  PlacementRequest req = OnGpus({0, 1});
  req.allowed_cpus = {0, 8, 1};
  p = Place(plan, t, req);
  EXPECT_EQ(Cpus(p.ranks[0]), "0,8");
  EXPECT_EQ(Cpus(p.ranks[1]), "1");
  // GPU 2 is on the other package.
  p = Place(plan, t, OnGpus({0, 2}));
  EXPECT_EQ(Cpus(p.ranks[0]), "0-3,8-11");
  EXPECT_EQ(p.ranks[1].numa, 1);
  EXPECT_EQ(Cpus(p.ranks[1]), "4-7,12-15");
}

TEST(Placement, PerGpuAndPerStepNeedsAndARankSpanningNodes) {
  LaunchPlan plan;
  plan.arm = "tp2x2";
  plan.gpus = 4;
  plan.tp = 2;
  plan.dp = 2;
  plan.ranks = {PlannedRank{0, {0, 1}, {}}, PlannedRank{1, {2, 3}, {}}};
  plan.host_memory = {
      PlannedHostMemory{"tables", HostMemoryNeed::Per::kDpRank, 100 * kGiB, 2, 200 * kGiB},
      PlannedHostMemory{"kv", HostMemoryNeed::Per::kGpu, 8 * kGiB, 4, 32 * kGiB},
      PlannedHostMemory{"cache", HostMemoryNeed::Per::kStep, 5 * kGiB, 1, 5 * kGiB},
  };
  // Step GPUs 3,4 | 5,6: rank 0 spans nodes 0 and 1.
  const Placement p = Place(plan, Load("hgx-b300-2tib.xml"), OnGpus({3, 4, 5, 6}));
  EXPECT_EQ(p.ranks[0].gpus, (std::vector<int>{3, 4}));
  EXPECT_EQ(p.ranks[0].numa, 0);
  EXPECT_EQ(p.ranks[1].numa, 1);
  EXPECT_EQ(p.notes, std::vector<std::string>{"rank 0's GPUs 3-4 span NUMA nodes 0-1; placed on node 0, the node of "
                                              "GPU 3"});
  EXPECT_EQ(p.FindNuma(0)->needed_bytes, (100 + 8 + 5) * kGiB);
  EXPECT_EQ(p.FindNuma(0)->breakdown, "1 rank x 100 GiB tables + 1 GPU x 8 GiB kv + 5 GiB for the step cache");
  EXPECT_EQ(p.FindNuma(1)->needed_bytes, (100 + 3 * 8) * kGiB);
  EXPECT_EQ(p.FindNuma(1)->breakdown, "1 rank x 100 GiB tables + 3 GPUs x 8 GiB kv");
  EXPECT_EQ(p.ranks[0].host_bytes, (100 + 16 + 5) * kGiB);
  EXPECT_EQ(p.ranks[1].host_bytes, (100 + 16) * kGiB);
}

TEST(Placement, JsonAndSummary) {
  Topology t = Load("hgx-b300-4tib.xml");
  ASSERT_TRUE(SetNumaFreeBytes(t, 0, 610 * kGiB).ok());
  PlacementRequest req = OnGpus({0, 1, 2, 3});
  req.shm_free_bytes = 24 * kGiB;
  req.memlock = MemlockLimit{true, 0};
  req.pinned_memory = true;
  const Placement p = Place(Plan("dep4"), t, req);
  rapidjson::Document d;
  const std::string json = PlacementToJson(p, true);
  d.Parse(json.c_str());
  ASSERT_FALSE(d.HasParseError()) << json;
  EXPECT_STREQ(d["arm"].GetString(), "dep4");
  EXPECT_STREQ(d["verdict"].GetString(), "refused");
  ASSERT_EQ(d["ranks"].Size(), 4u);
  EXPECT_EQ(d["ranks"][1]["rank"].GetInt(), 1);
  EXPECT_EQ(d["ranks"][1]["gpus"][0].GetInt(), 1);
  EXPECT_EQ(d["ranks"][1]["numa"].GetInt(), 0);
  EXPECT_STREQ(d["ranks"][1]["cpus"].GetString(), "16-31");
  ASSERT_EQ(d["numa"].Size(), 2u);
  EXPECT_EQ(d["numa"][0]["needed_bytes"].GetUint64(), 756 * kGiB);
  EXPECT_EQ(d["numa"][0]["available_bytes"].GetUint64(), 610 * kGiB);
  EXPECT_STREQ(d["numa"][0]["available"].GetString(), "free");
  EXPECT_STREQ(d["numa"][1]["available"].GetString(), "total");
  EXPECT_STREQ(d["memlock"]["limit"].GetString(), "unlimited");
  EXPECT_EQ(d["shm"]["needed_bytes"].GetUint64(), kGiB);
  ASSERT_EQ(d["problems"].Size(), 1u);
  EXPECT_EQ(std::string(d["problems"][0].GetString()), p.problems[0]);
  EXPECT_EQ(PlacementToJson(p, false).find('\n'), std::string::npos);

  const std::string s = PlacementSummary(p);
  EXPECT_EQ(s.rfind("dep4: refused\n", 0), 0u) << s;
  EXPECT_NE(s.find("rank 2: GPUs 2, NUMA node 0, CPUs 32-47, host memory 189 GiB\n"), std::string::npos) << s;
  EXPECT_NE(s.find("NUMA node 0: needs 756 GiB (4 ranks x 189 GiB), has 610 GiB available\n"), std::string::npos);
  EXPECT_NE(s.find("problem: dep4 needs 756 GiB on NUMA node 0"), std::string::npos);
}

TEST(Placement, PolicyNames) {
  EXPECT_EQ(ParsePlacementPolicy("strict").value(), PlacementPolicy::kStrict);
  EXPECT_EQ(ParsePlacementPolicy("warn").value(), PlacementPolicy::kWarn);
  EXPECT_EQ(ParsePlacementPolicy("loose").error().message, "placement policy 'loose' is unknown; allowed: strict, warn");
  EXPECT_STREQ(PlacementPolicyName(PlacementPolicy::kWarn), "warn");
}

}  // namespace
}  // namespace ix

namespace ix {
namespace {

// dep4 with a KV offload tier at InferenceX's DEP4 budget (dram-utilization
// 0.95 on b300-nv: 1424 GB, 356 GB per GPU worker).
LaunchPlan Dep4WithTier(const std::string& tier, int64_t gb) {
  Result<Recipe> recipe = LoadRecipeByName(IX_SOURCE_DIR "/recipes", "dsv41flash-fp4-b300-vllm");
  EXPECT_TRUE(recipe.ok());
  RenderRequest req;
  req.arm = "dep4";
  req.conc = 64;
  req.kv_offload = tier;
  req.total_cpu_dram_gb = gb;
  Result<LaunchPlan> plan = RenderDryRun(recipe.value(), req);
  EXPECT_TRUE(plan.ok()) << plan.error().message;
  return std::move(plan).value();
}

// Per NUMA node: 4 x 189 GiB of Engram tables + 4 x 356 GB of offload =
// 2,235,748,818,944 bytes (2082.2 GiB), beside which a 4 TiB socket fits
// and a 2 TiB one (2048 GiB) does not.
TEST(Placement, KvOffloadCountsBesideTheEngramTables) {
  constexpr uint64_t kNeed = 4 * 189 * kGiB + 4 * 356000000000ull;
  const Placement fits = Place(Dep4WithTier("vllm-simple", 1424), Load("hgx-b300-4tib.xml"), OnGpus({0, 1, 2, 3}));
  EXPECT_TRUE(fits.fits);
  EXPECT_EQ(fits.FindNuma(0)->needed_bytes, kNeed);
  EXPECT_EQ(fits.ranks[0].host_bytes, 189 * kGiB + 356000000000ull);
  EXPECT_NE(fits.FindNuma(0)->breakdown.find("4 ranks x 189 GiB engram_tables + 4 GPUs x "), std::string::npos)
      << fits.FindNuma(0)->breakdown;
  EXPECT_NE(fits.FindNuma(0)->breakdown.find(" kv_offload_cpu"), std::string::npos);

  const Placement refused = Place(Dep4WithTier("vllm-simple", 1424), Load("hgx-b300-2tib.xml"), OnGpus({0, 1, 2, 3}));
  EXPECT_FALSE(refused.fits);
  ASSERT_EQ(refused.problems.size(), 1u);
  EXPECT_EQ(refused.problems[0],
            "dep4 needs 2082.20 GiB on NUMA node 0 (4 ranks x 189 GiB engram_tables + 4 GPUs x 331.55 GiB "
            "kv_offload_cpu); node 0 has 2048 GiB in total (free memory not measured)");
  // Without the tier the same socket holds the tables alone.
  EXPECT_TRUE(Place(Dep4WithTier("", 0), Load("hgx-b300-2tib.xml"), OnGpus({0, 1, 2, 3})).fits);
  // The mooncake segment counts the same way.
  EXPECT_EQ(Place(Dep4WithTier("mooncake", 1424), Load("hgx-b300-4tib.xml"), OnGpus({0, 1, 2, 3}))
                .FindNuma(0)->needed_bytes,
            kNeed);
}

}  // namespace
}  // namespace ix
