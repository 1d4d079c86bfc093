#include "spank_plugin/step_setup.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/recipe.h"

namespace ix {
namespace {

StepSetup Dep4Setup() {
  Result<Recipe> r = LoadRecipeByName(IX_SOURCE_DIR "/recipes", "dsv41flash-fp4-b300-vllm");
  EXPECT_TRUE(r.ok());
  StepSetup s;
  s.step_id = "7.0";
  s.recipe_dir = IX_SOURCE_DIR "/recipes";
  s.recipe = "dsv41flash-fp4-b300-vllm";
  s.request.arm = "dep4";
  s.request.conc = 64;
  s.request.ports = {{"PORT", 21000}, {"ENGINE_PORT", 21007}, {"ROUTER_METRICS_PORT", 21003}};
  s.plan = RenderPlan(r.value(), s.request).value();
  s.run_dir = "/run/inferencex/steps/7.0";
  s.result_dir = "/results/7.0";
  return s;
}

Placement TwoRanksOn(int node_a, int node_b) {
  Placement p;
  p.ranks = {RankPlacement{0, {0}, node_a, {0, 1}, 0}, RankPlacement{1, {1}, node_b, {2, 3}, 0}};
  return p;
}

TEST(StepSetup, EngineIsBoundToItsRanksNodeAndCpus) {
  const StepSetup s = Dep4Setup();
  auto b = BindingsFor(s.plan, TwoRanksOn(1, 1));
  ASSERT_TRUE(b.ok()) << b.error().message;
  ASSERT_EQ(b.value().size(), 2u);
  EXPECT_EQ(b.value()[0].first, "engine");
  EXPECT_EQ(b.value()[0].second.cpus, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(b.value()[0].second.numa, 1);
  EXPECT_EQ(b.value()[1].first, "router");
  EXPECT_EQ(b.value()[1].second.cpus, (std::vector<int>{0, 1}));
}

TEST(StepSetup, RanksOnSeveralNodesAreNeverSilentlyBoundToOne) {
  auto b = BindingsFor(Dep4Setup().plan, TwoRanksOn(0, 1));
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().message.find("span NUMA nodes 0-1"), std::string::npos) << b.error().message;
}

TEST(StepSetup, StepdArgvCarriesEveryLeasedPortAndBinding) {
  StepSetup s = Dep4Setup();
  s.bindings = {{"engine", BindingTarget{{0, 1, 2, 3}, 0}}};
  const auto a = StepdArgv("/usr/libexec/inferencex/ix-stepd", s, 3, 4242);
  auto has = [&](const std::string& flag, const std::string& value) {
    for (size_t i = 0; i + 1 < a.size(); ++i) {
      if (a[i] == flag && a[i + 1] == value) return true;
    }
    return false;
  };
  EXPECT_EQ(a[0], "/usr/libexec/inferencex/ix-stepd");
  EXPECT_TRUE(has("--arm", "dep4"));
  EXPECT_TRUE(has("--conc", "64"));
  EXPECT_TRUE(has("--port", "ENGINE_PORT=21007"));
  EXPECT_TRUE(has("--port", "ROUTER_METRICS_PORT=21003"));
  EXPECT_TRUE(has("--bind", "engine=0-3@0"));
  EXPECT_TRUE(has("--client-pid", "4242"));
  EXPECT_TRUE(has("--ready-fd", "3"));
  EXPECT_EQ(std::count(a.begin(), a.end(), "--eval-only"), 0);
}

TEST(StepSetup, TaskEnvironmentPointsTheClientAtThePublicPort) {
  const EnvList env = TaskEnvironment(Dep4Setup());
  auto get = [&](const std::string& k) {
    for (const auto& [n, v] : env) {
      if (n == k) return v;
    }
    return std::string("<unset>");
  };
  EXPECT_EQ(get("IX_ENDPOINT"), "http://localhost:21000");
  EXPECT_EQ(get("IX_PORT"), "21000");
  EXPECT_EQ(get("IX_PORT_ENGINE_PORT"), "21007");
  EXPECT_EQ(get("IX_RUN_DIR"), "/run/inferencex/steps/7.0");
  EXPECT_EQ(get("IX_RESULT_DIR"), "/results/7.0");
  EXPECT_EQ(get("AIPERF_SERVER_URL"), "http://localhost:21000");
  EXPECT_EQ(get("AIPERF_SERVER_METRICS_URLS"), "http://localhost:21007/metrics");
  EXPECT_EQ(get("AIPERF_HTTP_X_SESSION_ID_FROM_CORRELATION_ID"), "1");
}

}  // namespace
}  // namespace ix
