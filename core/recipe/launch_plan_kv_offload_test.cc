// KV offload tiers: the schema (recipe_kv_offload.cc) and their rendering
// into a LaunchPlan. The expected offload texts are not typed from this
// code's output: they are what the offload branches of InferenceX's launch
// script (dsv4_fp4_b300_vllm_mtp.sh) wrote, run by hand with
// TOTAL_CPU_DRAM_GB=1424, TP=4, PCP_SIZE=1 and the Mooncake master on port
// 20001 (tests/fixtures/kv_offload/README.md), compared here byte for byte.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/recipe/launch_plan.h"
#include "core/recipe/recipe_test_util.h"
#include "core/recipe/launch_plan_kv_offload.h"
#include "tests/support/test.h"

namespace ix {
namespace {

std::string Fixture(const std::string& name) {
  std::ifstream in(IX_SOURCE_DIR "/tests/fixtures/kv_offload/" + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << name;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Get(const EnvList& env, const std::string& k) {
  for (const auto& [n, v] : env) {
    if (n == k) return v;
  }
  return "<unset>";
}

// The seed recipe (SeedRecipeTest's recipe_) rendered.
class KvOffloadPlanTest : public test::SeedRecipeTest {
 protected:
  // The arm with the tier at `gb`, ports numbered as a step would lease them.
  Result<LaunchPlan> Render(const std::string& arm, const std::string& tier, int64_t gb) {
    RenderRequest req;
    req.arm = arm;
    req.conc = 64;
    req.kv_offload = tier;
    req.total_cpu_dram_gb = gb;
    req.result_dir = "/run/ix/step-1";
    Result<std::vector<std::string>> names = PortNames(recipe_, arm, tier);
    if (!names) return names.error();
    req.ports = PlaceholderPorts(names.value());
    return RenderPlan(recipe_, req);
  }

  const PlannedProcess& Engine(const LaunchPlan& p) {
    for (const auto& x : p.processes) {
      if (x.name == "engine") return x;
    }
    ADD_FAILURE() << "no engine";
    return p.processes.front();
  }

};

TEST_F(KvOffloadPlanTest, Dep4VllmSimpleAddsTheScriptsConfigAtTheEnd) {
  Result<LaunchPlan> base = Render("dep4", "", 0);
  Result<LaunchPlan> p = Render("dep4", "vllm-simple", 1424);
  ASSERT_TRUE(base.ok() && p.ok()) << (p.ok() ? base.error().message : p.error().message);
  const PlannedProcess& e = Engine(p.value());
  std::vector<std::string> want = Engine(base.value()).argv;
  want.push_back("--kv-transfer-config");
  want.push_back(Fixture("simple-dep4-1424.txt"));
  EXPECT_EQ(e.argv, want);
  EXPECT_EQ(Get(e.env, "PYTHONHASHSEED"), "42");
  EXPECT_EQ(e.env.size(), Engine(base.value()).env.size() + 1);
  EXPECT_EQ(p.value().kv_offload, "vllm-simple");
  EXPECT_TRUE(p.value().files.empty());
  EXPECT_EQ(p.value().ports, base.value().ports);  // no server, no port
  // Same processes as without the tier (engine, router).
  ASSERT_EQ(p.value().processes.size(), base.value().processes.size());
  EXPECT_EQ(p.value().processes.back().argv, base.value().processes.back().argv);
  // 1424 GB / 4 GPUs: cpu_bytes_to_use per GPU worker, after the Engram tables.
  ASSERT_EQ(p.value().host_memory.size(), 2u);
  EXPECT_EQ(p.value().host_memory[0].name, "engram_tables");
  const PlannedHostMemory& h = p.value().host_memory[1];
  EXPECT_EQ(h.name, "kv_offload_cpu");
  EXPECT_EQ(h.per, HostMemoryNeed::Per::kGpu);
  EXPECT_EQ(h.bytes_each, 356000000000u);
  EXPECT_EQ(h.count, 4);
  EXPECT_EQ(h.total_bytes, 1424000000000u);
  EXPECT_TRUE(h.pinned);
  EXPECT_EQ(Get(p.value().variables, "KV_LAZY_OFFLOAD"), "false");
  EXPECT_EQ(Get(p.value().variables, "GPU_COUNT"), "4");
}

TEST_F(KvOffloadPlanTest, Tp4VllmSimpleIsLazy) {
  Result<LaunchPlan> p = Render("tp4", "vllm-simple", 1424);
  ASSERT_TRUE(p.ok()) << p.error().message;
  const PlannedProcess& e = Engine(p.value());
  ASSERT_GE(e.argv.size(), 2u);
  EXPECT_EQ(e.argv[e.argv.size() - 2], "--kv-transfer-config");
  EXPECT_EQ(e.argv.back(), Fixture("simple-tp4-1424.txt"));
}

TEST_F(KvOffloadPlanTest, Tp4MooncakeStartsTheMasterFirstOnALeasedPort) {
  Result<LaunchPlan> base = Render("tp4", "none", 0);
  Result<LaunchPlan> p = Render("tp4", "mooncake", 1424);
  ASSERT_TRUE(base.ok() && p.ok()) << (p.ok() ? base.error().message : p.error().message);
  // The tier's port is leased like the arm's: PORT=20000, the master 20001.
  EXPECT_EQ(p.value().ports, (PortList{{"PORT", 20000}, {"MOONCAKE_MASTER_PORT", 20001}}));
  ASSERT_EQ(p.value().processes.size(), 2u);
  const PlannedProcess& m = p.value().processes[0];
  EXPECT_EQ(m.name, "mooncake_master");
  EXPECT_EQ(m.role, PlannedProcess::kServerRole);
  EXPECT_EQ(m.log, "mooncake_master.log");
  EXPECT_EQ(m.argv, (std::vector<std::string>{"mooncake_master", "--port", "20001",
                                              "--eviction_high_watermark_ratio=0.80", "--eviction_ratio=0.10"}));
  ASSERT_EQ(m.readiness.size(), 1u);
  EXPECT_EQ(m.readiness[0].kind, ReadinessTemplate::Kind::kTcpListening);
  EXPECT_EQ(m.readiness[0].url, "127.0.0.1:20001");
  const PlannedProcess& e = p.value().processes[1];
  EXPECT_EQ(e.name, "engine");
  EXPECT_EQ(e.role, "");
  std::vector<std::string> want = base.value().processes[0].argv;
  want.push_back("--kv-transfer-config");
  want.push_back(Fixture("mooncake-kv-transfer-config.txt"));
  EXPECT_EQ(e.argv, want);
  // The script's exports, in its order, after the recipe's engine env.
  EnvList env = base.value().processes[0].env;
  for (const auto& kv : EnvList{{"MOONCAKE_CONFIG_PATH", "/run/ix/step-1/mooncake_config.json"},
                                {"MC_ENABLE_DEST_DEVICE_AFFINITY", "1"},
                                {"PYTHONHASHSEED", "0"},
                                {"WITH_NVIDIA_PEERMEM", "0"},
                                {"MC_SLICE_SIZE", "1048576"},
                                {"MC_WORKERS_PER_CTX", "4"}}) {
    env.push_back(kv);
  }
  EXPECT_EQ(e.env, env);
  ASSERT_EQ(p.value().files.size(), 1u);
  EXPECT_EQ(p.value().files[0].name, "mooncake_config.json");
  EXPECT_EQ(p.value().files[0].text, Fixture("mooncake-tp4-1424.json"));
  const PlannedHostMemory& h = p.value().host_memory.back();
  EXPECT_EQ(h.name, "mooncake_segment");
  EXPECT_EQ(h.bytes_each, 356000000000u);
  EXPECT_EQ(h.count, 4);
}

TEST_F(KvOffloadPlanTest, RenderErrorsNameWhatIsAllowed) {
  Result<LaunchPlan> p = Render("tp4", "lmcache", 1424);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().message,
            "recipe dsv41flash-fp4-b300-vllm serves no KV offload tier 'lmcache'; allowed: none, vllm-simple, mooncake");
  p = Render("dep4", "vllm-simple", 0);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message.find("KV offload tier vllm-simple (arm dep4) sizes its host DRAM from "
                                   "TOTAL_CPU_DRAM_GB, which must be a positive number of GB"),
            std::string::npos)
      << p.error().message;
  // A plan with a tier needs the tier's ports: PortNames without it lacks them.
  RenderRequest req;
  req.arm = "tp4";
  req.conc = 8;
  req.kv_offload = "mooncake";
  req.total_cpu_dram_gb = 1424;
  req.result_dir = "/run";
  req.ports = PlaceholderPorts(PortNames(recipe_, "tp4").value());
  p = RenderPlan(recipe_, req);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message.find("no port number given for MOONCAKE_MASTER_PORT"), std::string::npos);
  req.ports = PlaceholderPorts(PortNames(recipe_, "tp4", "mooncake").value());
  req.result_dir = "";
  p = RenderPlan(recipe_, req);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message.find("needs the step's result directory"), std::string::npos);
  // Servers across nodes are refused; vllm-simple across nodes renders.
  req = RenderRequest{};
  req.arm = "dep16";
  req.conc = 64;
  req.kv_offload = "mooncake";
  req.total_cpu_dram_gb = 5698;
  p = RenderDryRun(recipe_, req);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message.find("an arm across nodes does not support"), std::string::npos);
  req.kv_offload = "vllm-simple";
  p = RenderDryRun(recipe_, req);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p.value().host_memory.back().bytes_each, 5698000000000u / 16);
}

TEST_F(KvOffloadPlanTest, NoTierLeavesThePlanAsItWas) {
  for (const char* tier : {"", "none"}) {
    RenderRequest req;
    req.arm = "dep4";
    req.conc = 64;
    req.kv_offload = tier;
    req.total_cpu_dram_gb = 1424;  // ignored without a tier
    Result<LaunchPlan> p = RenderDryRun(recipe_, req);
    req.kv_offload = "";
    req.total_cpu_dram_gb = 0;
    Result<LaunchPlan> base = RenderDryRun(recipe_, req);
    ASSERT_TRUE(p.ok() && base.ok());
    EXPECT_EQ(PlanToJson(p.value(), true), PlanToJson(base.value(), true));
    EXPECT_EQ(PlanToJson(p.value(), false).find("kv_offload"), std::string::npos);
  }
  EXPECT_EQ(PortNames(recipe_, "tp4", "none").value(), PortNames(recipe_, "tp4").value());
}

TEST_F(KvOffloadPlanTest, JsonRoundTripCarriesFilesServersAndReadiness) {
  Result<LaunchPlan> p = Render("tp4", "mooncake", 1424);
  ASSERT_TRUE(p.ok());
  const std::string json = PlanToJson(p.value(), false);
  Result<LaunchPlan> back = PlanFromJson(json, "plan.json");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back.value().kv_offload, "mooncake");
  ASSERT_EQ(back.value().files.size(), 1u);
  EXPECT_EQ(back.value().files[0].text, p.value().files[0].text);
  EXPECT_EQ(back.value().processes[0].role, "server");
  EXPECT_EQ(back.value().processes[0].readiness[0].kind, ReadinessTemplate::Kind::kTcpListening);
  EXPECT_EQ(back.value().processes[1].role, "");
  EXPECT_EQ(PlanToJson(back.value(), false), json);
  // A server after the engine, a bad role or file name are refused.
  Result<LaunchPlan> bad = PlanFromJson(test::ReplaceOnce(json, "\"role\":\"server\"", "\"role\":\"helper\""), "p");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("field 'processes[0].role' is not server"), std::string::npos);
  bad = PlanFromJson(test::ReplaceOnce(json, "\"name\":\"mooncake_config.json\"", "\"name\":\"../x\""), "p");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("files[0].name' is not a plain file name"), std::string::npos);
  LaunchPlan swapped = p.value();
  std::swap(swapped.processes[0], swapped.processes[1]);
  bad = PlanFromJson(PlanToJson(swapped, false), "p");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("is a server after a process that is not"), std::string::npos);
  const std::string summary = PlanSummary(p.value());
  EXPECT_NE(summary.find("mooncake_master (server, started before the engine)"), std::string::npos);
  EXPECT_NE(summary.find("ready when: 127.0.0.1:20001 accepts TCP connections"), std::string::npos);
  EXPECT_NE(summary.find("file mooncake_config.json in the run directory:\n  | {\n"), std::string::npos);
}

TEST(KvOffloadBytes, IntegersWithUnitsExactly) {
  EXPECT_EQ(ParseByteCount("356000000000").value(), 356000000000u);
  EXPECT_EQ(ParseByteCount("356GB").value(), 356000000000u);
  EXPECT_EQ(ParseByteCount("189GiB").value(), 189ull << 30);
  EXPECT_EQ(ParseByteCount("0").value(), 0u);
  for (const char* bad : {"", "GB", "1.5GB", "-1", "12 GB", "99999999999TB", "18446744073709551616"}) {
    EXPECT_FALSE(ParseByteCount(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace ix
