// Expectations here are typed from the InferenceX launch script's behaviour
// (issue #2), not copied from this code's output.
#include "core/recipe/launch_plan.h"
#include "core/recipe/recipe_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace ix {
namespace {

const char kThroughputSpec[] =
    R"({"method":"dspark","num_speculative_tokens":5,"draft_sample_method":"probabilistic","rejection_sample_method":"synthetic","synthetic_acceptance_length":3.51,"enable_adaptive_verification":false})";
const char kEvalSpec[] =
    R"({"method":"dspark","num_speculative_tokens":5,"draft_sample_method":"probabilistic","rejection_sample_method":"block","enable_adaptive_verification":true})";

// The seed recipe (SeedRecipeTest's recipe_) rendered.
class LaunchPlanTest : public test::SeedRecipeTest {
 protected:
  Result<LaunchPlan> Render(const std::string& arm, int64_t conc, bool eval_only = false,
                            EnvList overrides = {}) {
    RenderRequest req;
    req.arm = arm;
    req.conc = conc;
    req.eval_only = eval_only;
    req.overrides = std::move(overrides);
    req.ports = {{"PORT", 8888}, {"ENGINE_PORT", 23456}, {"ROUTER_METRICS_PORT", 29100}};
    return RenderPlan(recipe_, req);
  }

  static std::string Get(const EnvList& env, const std::string& k) {
    for (const auto& [n, v] : env) {
      if (n == k) return v;
    }
    return "<unset>";
  }

};

std::vector<std::string> Tp4Argv(const std::string& port, const std::string& capture,
                                 const std::string& spec) {
  return {"vllm", "serve", "/models/deepseek-ai/DeepSeek-V4.1-Flash",
          "--served-model-name", "deepseek-ai/DeepSeek-V4.1-Flash",
          "--host", "0.0.0.0", "--port", port,
          "--tensor-parallel-size", "4",
          "--language-model-only", "--tokenizer-mode", "deepseek_v41",
          "--tool-call-parser", "deepseek_v41", "--enable-auto-tool-choice",
          "--reasoning-parser", "deepseek_v41",
          "--engram-config", R"({"cpu_offload":true})",
          "--speculative-config", spec,
          "--max-model-len", "1048576",
          "--max-cudagraph-capture-size", capture,
          "--disable-uvicorn-access-log"};
}

TEST_F(LaunchPlanTest, Tp4MatchesTheScriptArgumentForArgument) {
  for (auto [conc, capture] : {std::pair{1, "8"}, {8, "64"}, {128, "1024"}}) {
    Result<LaunchPlan> p = Render("tp4", conc);
    ASSERT_TRUE(p.ok()) << p.error().message;
    ASSERT_EQ(p.value().processes.size(), 1u);
    EXPECT_EQ(p.value().processes[0].argv, Tp4Argv("8888", capture, kThroughputSpec)) << conc;
  }
  Result<LaunchPlan> p = Render("tp4", 8);
  const PlannedProcess& e = p.value().processes[0];
  EXPECT_EQ(e.env, (EnvList{{"VLLM_ENGINE_READY_TIMEOUT_S", "3600"},
                            {"VLLM_USE_RUST_FRONTEND", "1"},
                            {"PYTHONUNBUFFERED", "1"}}));
  EXPECT_EQ(p.value().client_env,
            (EnvList{{"AIPERF_SERVER_URL", "http://localhost:8888"},
                     {"AIPERF_SERVER_METRICS_URLS", "http://localhost:8888/metrics"},
                     {"AIPERF_REQUIRED_SERVER_METRIC_PREFIX", "vllm:"}}));
  EXPECT_EQ(p.value().ports, (PortList{{"PORT", 8888}}));
  ASSERT_EQ(p.value().ranks.size(), 1u);
  EXPECT_EQ(p.value().ranks[0].gpus, (std::vector<int64_t>{0, 1, 2, 3}));
  ASSERT_EQ(e.readiness.size(), 2u);
  EXPECT_EQ(e.readiness[0].url, "http://localhost:8888/health");
  EXPECT_EQ(e.readiness[1].kind, ReadinessTemplate::Kind::kModelsNonEmpty);
  EXPECT_EQ(e.readiness[1].url, "http://localhost:8888/v1/models");
  ASSERT_EQ(p.value().host_memory.size(), 1u);
  EXPECT_EQ(p.value().host_memory[0].total_bytes, 189ull << 30);
}

TEST_F(LaunchPlanTest, EvalOnlySwapsTheSpeculativeConfig) {
  Result<LaunchPlan> p = Render("tp4", 8, true);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p.value().processes[0].argv, Tp4Argv("8888", "64", kEvalSpec));
  EXPECT_TRUE(p.value().eval_only);
}

TEST_F(LaunchPlanTest, LoadStrategyAppendsTheFlagOnlyWhenSet) {
  Result<LaunchPlan> p = Render("tp4", 8, false, {{"LOAD_STRATEGY", "eager"}});
  ASSERT_TRUE(p.ok());
  std::vector<std::string> want = Tp4Argv("8888", "64", kThroughputSpec);
  want.push_back("--safetensors-load-strategy");
  want.push_back("eager");
  EXPECT_EQ(p.value().processes[0].argv, want);
}

TEST_F(LaunchPlanTest, Tep4AddsExpertParallel) {
  Result<LaunchPlan> p = Render("tep4", 64);
  ASSERT_TRUE(p.ok());
  std::vector<std::string> want = Tp4Argv("8888", "512", kThroughputSpec);
  want.insert(want.begin() + 11, "--enable-expert-parallel");
  EXPECT_EQ(p.value().processes[0].argv, want);
  EXPECT_EQ(p.value().ep, 4);
}

TEST_F(LaunchPlanTest, Dep4RunsEngineBehindRouterOnSeparatePorts) {
  for (auto [conc, capture] : {std::pair{32, "128"}, {64, "256"}, {128, "512"}}) {
    Result<LaunchPlan> p = Render("dep4", conc);
    ASSERT_TRUE(p.ok()) << p.error().message;
    const LaunchPlan& plan = p.value();
    ASSERT_EQ(plan.processes.size(), 2u);
    std::vector<std::string> want = Tp4Argv("23456", capture, kThroughputSpec);
    want[10] = "1";
    want.insert(want.begin() + 11, {"--data-parallel-size", "4", "--enable-expert-parallel",
                                    "--gpu-memory-utilization", "0.85"});
    EXPECT_EQ(plan.processes[0].argv, want) << conc;
    EXPECT_EQ(Get(plan.processes[0].env, "PYTORCH_ALLOC_CONF"), "expandable_segments:True");
    EXPECT_EQ(plan.processes[1].name, "router");
    EXPECT_EQ(plan.processes[1].log, "router.log");
    EXPECT_EQ(plan.processes[1].argv,
              (std::vector<std::string>{"vllm-router", "--worker-urls", "http://localhost:23456",
                                        "--policy", "consistent_hash",
                                        "--intra-node-data-parallel-size", "4", "--host", "0.0.0.0",
                                        "--port", "8888", "--prometheus-host", "127.0.0.1",
                                        "--prometheus-port", "29100", "--request-timeout-secs",
                                        "14400", "--disable-retries"}));
    EXPECT_EQ(Get(plan.client_env, "AIPERF_SERVER_URL"), "http://localhost:8888");
    EXPECT_EQ(Get(plan.client_env, "AIPERF_SERVER_METRICS_URLS"), "http://localhost:23456/metrics");
    EXPECT_EQ(Get(plan.client_env, "AIPERF_HTTP_X_SESSION_ID_FROM_CORRELATION_ID"), "1");
    EXPECT_EQ(plan.ranks.size(), 4u);
    EXPECT_EQ(plan.ranks[3].gpus, std::vector<int64_t>{3});
    EXPECT_EQ(plan.host_memory[0].count, 4);
    EXPECT_EQ(plan.host_memory[0].total_bytes, 756ull << 30);
  }
}

TEST_F(LaunchPlanTest, Dep4RefusesAConcurrencyThatDoesNotSplitOverRanks) {
  Result<LaunchPlan> p = Render("dep4", 3);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message.find("2 x CONC must be divisible by 4"), std::string::npos)
      << p.error().message;
  EXPECT_TRUE(Render("dep4", 2).ok());
}

TEST_F(LaunchPlanTest, BadRequests) {
  EXPECT_NE(Render("tp8", 8).error().message.find("unknown arm 'tp8'"), std::string::npos);
  EXPECT_NE(Render("tp8", 8).error().message.find("allowed: tp4, tep4, dep4"), std::string::npos);
  EXPECT_NE(Render("tp4", 0).error().message.find("positive"), std::string::npos);
  EXPECT_NE(Render("tp4", 8, false, {{"NOPE", "1"}}).error().message.find("settable: MODEL"),
            std::string::npos);
  RenderRequest req;
  req.arm = "dep4";
  req.conc = 8;
  req.ports = {{"PORT", 1}, {"ENGINE_PORT", 1}, {"ROUTER_METRICS_PORT", 2}};
  EXPECT_NE(RenderPlan(recipe_, req).error().message.find("given to two names"), std::string::npos);
  req.ports = {{"PORT", 1}};
  EXPECT_NE(RenderPlan(recipe_, req).error().message.find("no port number given for ENGINE_PORT"),
            std::string::npos);
}

TEST(CaptureSize, PowersOfTwoCapped) {
  EXPECT_EQ(CaptureSize(1, 2048), 1);
  EXPECT_EQ(CaptureSize(6, 2048), 8);
  EXPECT_EQ(CaptureSize(64, 2048), 64);
  EXPECT_EQ(CaptureSize(65, 2048), 128);
  EXPECT_EQ(CaptureSize(100000, 2048), 2048);
}

}  // namespace
}  // namespace ix

namespace ix {
namespace {

// What ix-stepd reads is what the plugin wrote, field for field.
TEST(LaunchPlan, JsonRoundTripsEveryLayout) {
  Result<Recipe> r = LoadRecipeByName(IX_SOURCE_DIR "/recipes", "dsv41flash-fp4-b300-vllm");
  ASSERT_TRUE(r.ok()) << r.error().message;
  for (const char* arm : {"tp4", "dep4", "dep4-rankproc"}) {
    RenderRequest req;
    req.arm = arm;
    req.conc = 64;
    req.eval_only = std::string(arm) == "tp4";
    Result<LaunchPlan> plan = RenderDryRun(r.value(), req);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    const std::string json = PlanToJson(plan.value(), true);
    Result<LaunchPlan> back = PlanFromJson(json, "plan.json");
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(PlanToJson(back.value(), true), json) << arm;
  }
}

TEST_F(LaunchPlanTest, ABrokenPlanFileNamesTheField) {
  std::string json = PlanToJson(RenderDryRun(recipe_, {.arm = "dep4", .conc = 64}).value(), false);
  EXPECT_EQ(PlanFromJson("{", "p.json").error().message.rfind("p.json: not JSON", 0), 0u);
  std::string bad = json;
  bad.replace(bad.find("\"log\":\"server.log\""), 18, "\"log\":\"../x\"");
  EXPECT_EQ(PlanFromJson(bad, "p.json").error().message,
            "p.json: field 'processes[0].log' is not a plain file name");
  bad = json;
  bad.replace(bad.find("\"conc\":64"), 9, "\"conc\":\"64\"");
  EXPECT_EQ(PlanFromJson(bad, "p.json").error().message, "p.json: field 'plan.conc' is not an integer");
}

// Rank ports: one lease per rank, each rank's engine on its own port, the
// router given one worker URL per rank; elsewhere the name is rank 0's.
TEST(LaunchPlan, RankProcessLayoutRendersOneEnginePerRank) {
  Result<Recipe> r = LoadRecipeByName(IX_SOURCE_DIR "/recipes", "dsv41flash-fp4-b300-vllm");
  ASSERT_TRUE(r.ok());
  Result<std::vector<std::string>> names = PortNames(r.value(), "dep4-rankproc");
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(names.value(), (std::vector<std::string>{"PORT", "DP_RPC_PORT", "ROUTER_METRICS_PORT", "ENGINE_PORT_RANK0",
                                                     "ENGINE_PORT_RANK1", "ENGINE_PORT_RANK2", "ENGINE_PORT_RANK3"}));
  RenderRequest req;
  req.arm = "dep4-rankproc";
  req.conc = 32;
  req.ports = {{"PORT", 30000}, {"DP_RPC_PORT", 30001}, {"ROUTER_METRICS_PORT", 30002}, {"ENGINE_PORT_RANK0", 30010},
               {"ENGINE_PORT_RANK1", 30011}, {"ENGINE_PORT_RANK2", 30012}, {"ENGINE_PORT_RANK3", 30013}};
  Result<LaunchPlan> plan = RenderPlan(r.value(), req);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const LaunchPlan& p = plan.value();
  ASSERT_EQ(p.processes.size(), 5u);
  for (int rank = 0; rank < 4; ++rank) {
    const PlannedProcess& e = p.processes[rank];
    EXPECT_EQ(e.name, "engine-rank" + std::to_string(rank));
    EXPECT_EQ(e.log, "server-rank" + std::to_string(rank) + ".log");
    EXPECT_EQ(e.rank, rank);
    auto after = [&](const std::string& flag) {
      auto it = std::find(e.argv.begin(), e.argv.end(), flag);
      return it == e.argv.end() || it + 1 == e.argv.end() ? std::string("<none>") : *(it + 1);
    };
    EXPECT_EQ(after("--port"), std::to_string(30010 + rank));
    EXPECT_EQ(after("--data-parallel-rank"), std::to_string(rank));
    EXPECT_EQ(after("--data-parallel-rpc-port"), "30001");
    EXPECT_EQ(e.readiness[0].url, "http://localhost:" + std::to_string(30010 + rank) + "/health");
    EXPECT_EQ(p.ranks[rank].ports, (PortList{{"ENGINE_PORT", 30010 + rank}}));
  }
  const std::vector<std::string>& router = p.processes[4].argv;
  auto urls = std::find(router.begin(), router.end(), "--worker-urls");
  ASSERT_NE(urls, router.end());
  EXPECT_EQ(std::vector<std::string>(urls + 1, urls + 5),
            (std::vector<std::string>{"http://localhost:30010", "http://localhost:30011", "http://localhost:30012",
                                      "http://localhost:30013"}));
  EXPECT_EQ(*(urls + 5), "--policy");
  EXPECT_EQ(std::find(router.begin(), router.end(), "--intra-node-data-parallel-size"), router.end());
  EXPECT_EQ(p.processes[4].rank, -1);
  for (const auto& [k, v] : p.client_env) {
    if (k == "AIPERF_SERVER_METRICS_URLS") {
      EXPECT_EQ(v, "http://localhost:30010/metrics");
    }
  }
}

}  // namespace
}  // namespace ix
