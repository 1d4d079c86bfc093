#include "spank_plugin/step_setup.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <initializer_list>
#include <utility>

#include "core/recipe/recipe.h"

namespace ix {
namespace {

Recipe TestRecipe() {
  Result<Recipe> r = LoadRecipeByName(IX_SOURCE_DIR "/recipes", "dsv41flash-fp4-b300-vllm");
  EXPECT_TRUE(r.ok());
  return r.ok() ? std::move(r).value() : Recipe{};
}

StepSetup Dep4Setup(const Recipe& recipe = TestRecipe()) {
  StepSetup s;
  s.step_id = "7.0";
  s.recipe_dir = IX_SOURCE_DIR "/recipes";
  s.recipe = "dsv41flash-fp4-b300-vllm";
  s.request.arm = "dep4";
  s.request.conc = 64;
  s.request.ports = {{"PORT", 21000}, {"ENGINE_PORT", 21007}, {"ROUTER_METRICS_PORT", 21003}};
  s.plan = RenderPlan(recipe, s.request).value();
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

// A tier's server serves every rank: bound to all their CPUs, and to their
// NUMA node only when they share one.
TEST(StepSetup, ATiersServerIsBoundToEveryRanksCpusAndTheirNode) {
  LaunchPlan plan = Dep4Setup().plan;
  PlannedProcess master;
  master.name = "mooncake_master";
  master.role = PlannedProcess::kServerRole;
  plan.processes.insert(plan.processes.begin(), master);
  for (const DpLayout layout : {DpLayout::kRankProcess, DpLayout::kEngine}) {
    plan.dp_layout = layout;
    auto b = BindingsFor(plan, TwoRanksOn(1, 1));
    ASSERT_TRUE(b.ok()) << b.error().message;
    EXPECT_EQ(b.value()[0].first, "mooncake_master");
    EXPECT_EQ(b.value()[0].second.cpus, (std::vector<int>{0, 1, 2, 3}));
    EXPECT_EQ(b.value()[0].second.numa, 1);
    EXPECT_EQ(b.value().back().second.cpus, (std::vector<int>{0, 1}));  // the router: rank 0's
  }
  plan.dp_layout = DpLayout::kRankProcess;
  auto spanning = BindingsFor(plan, TwoRanksOn(0, 1));
  ASSERT_TRUE(spanning.ok()) << spanning.error().message;
  EXPECT_EQ(spanning.value()[0].second.cpus, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_FALSE(spanning.value()[0].second.numa.has_value());
}

TEST(StepSetup, StepdArgvCarriesThePlanFileAndEveryBinding) {
  StepSetup s = Dep4Setup();
  s.bindings = {{"engine", BindingTarget{{0, 1, 2, 3}, 0}}};
  const auto a = StepdArgv("/usr/libexec/inferencex/ix-stepd", s, 3, 4242, 4, true);
  auto has = [&](const std::string& flag, const std::string& value) {
    for (size_t i = 0; i + 1 < a.size(); ++i) {
      if (a[i] == flag && a[i + 1] == value) return true;
    }
    return false;
  };
  EXPECT_EQ(a[0], "/usr/libexec/inferencex/ix-stepd");
  EXPECT_TRUE(has("--plan", "plan.json"));
  EXPECT_TRUE(has("--run-dir-fd", "4"));
  EXPECT_TRUE(has("--run-dir", "/run/inferencex/steps/7.0"));
  EXPECT_NE(std::find(a.begin(), a.end(), "--stop-with-client"), a.end());
  EXPECT_TRUE(has("--bind", "engine=0-3@0"));
  EXPECT_TRUE(has("--client-pid", "4242"));
  EXPECT_TRUE(has("--ready-fd", "3"));
  EXPECT_EQ(std::count(a.begin(), a.end(), "--agent-socket"), 0);
  s.agent_socket = "/run/inferencex/agent.sock";
  const auto b = StepdArgv("/usr/libexec/inferencex/ix-stepd", s, 3, 4242, 4, false);
  EXPECT_EQ(std::find(b.begin(), b.end(), "--stop-with-client"), b.end());
  EXPECT_NE(std::find(b.begin(), b.end(), "/run/inferencex/agent.sock"), b.end());
  EXPECT_NE(std::find(b.begin(), b.end(), "7.0"), b.end());
}

// One engine process per rank, each bound to its own rank's node and CPUs.
TEST(StepSetup, RankProcessEnginesAreEachBoundToTheirRank) {
  Result<Recipe> r = LoadRecipeByName(IX_SOURCE_DIR "/recipes", "dsv41flash-fp4-b300-vllm");
  ASSERT_TRUE(r.ok());
  Result<LaunchPlan> plan = RenderDryRun(r.value(), {.arm = "dep4-rankproc", .conc = 64});
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  Placement p;
  p.ranks = {RankPlacement{0, {0}, 0, {0, 1}, 0}, RankPlacement{1, {1}, 0, {2, 3}, 0},
             RankPlacement{2, {2}, 1, {64, 65}, 0}, RankPlacement{3, {3}, 1, {66, 67}, 0}};
  auto b = BindingsFor(plan.value(), p);
  ASSERT_TRUE(b.ok()) << b.error().message;
  ASSERT_EQ(b.value().size(), 5u);
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_EQ(b.value()[rank].first, "engine-rank" + std::to_string(rank));
    EXPECT_EQ(b.value()[rank].second.cpus, p.ranks[rank].cpus);
    EXPECT_EQ(b.value()[rank].second.numa, p.ranks[rank].numa);
  }
  EXPECT_EQ(b.value()[4].first, "router");
  EXPECT_EQ(b.value()[4].second.numa, 0);
}

// Spanning nodes, the one engine gets the recipe's per-worker NUMA flags
// (one node and CPU list per GPU) and only a CPU binding of its own.
TEST(StepSetup, AnEngineSpanningNodesGetsThePerWorkerNumaFlags) {
  Result<Recipe> r = LoadRecipeByName(IX_SOURCE_DIR "/recipes", "dsv41flash-fp4-b300-vllm");
  ASSERT_TRUE(r.ok());
  StepSetup s = Dep4Setup();
  Placement p;
  p.ranks = {RankPlacement{0, {2}, 0, {0, 1}, 0}, RankPlacement{1, {3}, 0, {2, 3}, 0},
             RankPlacement{2, {4}, 1, {64, 65}, 0}, RankPlacement{3, {5}, 1, {66}, 0}};
  ASSERT_TRUE(RanksSpanNumaNodes(p));
  s.request.gpu_places = GpuPlacesFor(s.plan, p);
  Result<LaunchPlan> plan = RenderPlan(r.value(), s.request);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_TRUE(plan.value().worker_numa_flags);
  const std::vector<std::string>& argv = plan.value().processes[0].argv;
  const std::vector<std::string> tail(argv.end() - 11, argv.end());
  EXPECT_EQ(tail, (std::vector<std::string>{"--numa-bind", "--numa-bind-nodes", "0", "0", "1", "1",
                                            "--numa-bind-cpus", "0-1", "2-3", "64-65", "66"}));
  auto b = BindingsFor(plan.value(), p);
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(b.value()[0].second.cpus, (std::vector<int>{0, 1, 2, 3, 64, 65, 66}));
  EXPECT_FALSE(b.value()[0].second.numa.has_value());
  // Without spanning, the plan has no flags and the engine is bound to the node.
  EXPECT_FALSE(RanksSpanNumaNodes(TwoRanksOn(1, 1)));
  EXPECT_FALSE(s.plan.worker_numa_flags);
}

// Each (name, value): `env` sets name to value ("<unset>": not at all).
void ExpectEnv(const EnvList& env, std::initializer_list<std::pair<std::string, std::string>> want) {
  for (const auto& [name, value] : want) {
    std::string got = "<unset>";
    for (const auto& [n, v] : env) {
      if (n == name) got = v;
    }
    EXPECT_EQ(got, value) << name;
  }
}

TEST(StepSetup, TaskEnvironmentPointsTheClientAtThePublicPort) {
  ExpectEnv(TaskEnvironment(Dep4Setup()), {{"IX_ENDPOINT", "http://localhost:21000"},
                                           {"IX_PORT", "21000"},
                                           {"IX_PORT_ENGINE_PORT", "21007"},
                                           {"IX_RUN_DIR", "/run/inferencex/steps/7.0"},
                                           {"IX_RESULT_DIR", "/results/7.0"},
                                           {"AIPERF_SERVER_URL", "http://localhost:21000"},
                                           {"AIPERF_SERVER_METRICS_URLS", "http://localhost:21007/metrics"},
                                           {"AIPERF_HTTP_X_SESSION_ID_FROM_CORRELATION_ID", "1"}});
}

TEST(StepSetup, TaskEnvironmentAcrossNodesPointsEveryNodeAtTheHead) {
  StepSetup s = Dep4Setup();
  s.plan.nodes = 2;
  s.plan.node_rank = 1;
  s.plan.head_addr = "10.77.0.11";
  ExpectEnv(TaskEnvironment(s), {{"IX_ENDPOINT", "http://10.77.0.11:21000"},
                                 {"IX_NODE_RANK", "1"},
                                 {"IX_NODES", "2"},
                                 {"IX_HEAD_ADDR", "10.77.0.11"}});
  s.plan.head_addr = "fd00::b";
  ExpectEnv(TaskEnvironment(s), {{"IX_ENDPOINT", "http://[fd00::b]:21000"}});
  // One node: no node variables, the endpoint stays local.
  ExpectEnv(TaskEnvironment(Dep4Setup()), {{"IX_NODE_RANK", "<unset>"}, {"IX_ENDPOINT", "http://localhost:21000"}});
}

// ---- PlaceStep: the strict/warn decisions of init_post_opt -------------------

constexpr uint64_t kGiB = 1ull << 30;

// GPUs 0-3 on NUMA node 0 (CPUs 0-63), 4-7 on node 1 (CPUs 64-127).
Topology TwoTib() {
  Result<Topology> t = LoadTopologyXml(IX_SOURCE_DIR "/tests/fixtures/topology/hgx-b300-2tib.xml");
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
  return t.ok() ? std::move(t).value() : Topology{};
}

Result<StepGpus> OnGpus(std::vector<int> gpus) { return StepGpus{std::move(gpus), "test"}; }

// With a roomy /dev/shm (the default need is 1 GiB).
PlacementRequest Roomy() {
  PlacementRequest r;
  r.shm_free_bytes = 24 * kGiB;
  return r;
}

constexpr PlacementPolicy kStrict = PlacementPolicy::kStrict;
constexpr PlacementPolicy kWarn = PlacementPolicy::kWarn;

bool Has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(StepSetup, ThePlacementPolicyIsWarnOnlyWhenAskedFor) {
  EXPECT_EQ(StepPlacementPolicy(std::nullopt), kStrict);
  EXPECT_EQ(StepPlacementPolicy(std::string("strict")), kStrict);
  EXPECT_EQ(StepPlacementPolicy(std::string("warn")), kWarn);
}

// Fits: the same under either policy: the record, with what was done to
// RLIMIT_MEMLOCK, and the bindings, and nothing to warn about.
TEST(StepSetup, AFittingPlacementIsRecordedAndBound) {
  for (PlacementPolicy policy : {kStrict, kWarn}) {
    StepSetup s = Dep4Setup();
    MemlockDecision memlock;
    memlock.raise_to = MemlockLimit{true, 0};
    memlock.reason = "raised for the test";
    Result<std::string> json = PlaceStep(s, TestRecipe(), TwoTib(), OnGpus({0, 1, 2, 3}), Roomy(), memlock, policy);
    ASSERT_TRUE(json.ok()) << json.error().message;
    EXPECT_TRUE(Has(json.value(), R"("verdict": "fits")")) << json.value();
    EXPECT_TRUE(Has(json.value(), R"("set": "unlimited")")) << json.value();
    EXPECT_TRUE(Has(json.value(), R"("reason": "raised for the test")")) << json.value();
    EXPECT_TRUE(s.placement_notes.empty());
    ASSERT_EQ(s.bindings.size(), 2u);
    EXPECT_EQ(s.bindings[0].first, "engine");
    EXPECT_EQ(s.bindings[0].second.numa, 0);
    EXPECT_EQ(FormatIdList(s.bindings[0].second.cpus), "0-63");
    EXPECT_FALSE(s.plan.worker_numa_flags);
  }
}

// Each shortfall: strict refuses the step with it; warn notes it and goes
// on with what there is.
TEST(StepSetup, StepGpusThatCannotBeChosen) {
  const Error why{"GPU 9 of the step is not in the topology"};
  StepSetup s = Dep4Setup();
  Result<std::string> strict = PlaceStep(s, TestRecipe(), TwoTib(), why, Roomy(), {}, kStrict);
  ASSERT_FALSE(strict.ok());
  EXPECT_EQ(strict.error().message, why.message);
  EXPECT_TRUE(s.placement_notes.empty());
  Result<std::string> warn = PlaceStep(s, TestRecipe(), TwoTib(), why, Roomy(), {}, kWarn);
  ASSERT_TRUE(warn.ok());
  EXPECT_EQ(warn.value(), "null");
  EXPECT_EQ(s.placement_notes, std::vector<std::string>{why.message});
  EXPECT_TRUE(s.bindings.empty());
}

TEST(StepSetup, APlacementThatCannotBeComputed) {
  const std::string why = "dep4 uses 4 GPUs but the step has 2 (node GPUs 0-1)";
  StepSetup s = Dep4Setup();
  Result<std::string> strict = PlaceStep(s, TestRecipe(), TwoTib(), OnGpus({0, 1}), Roomy(), {}, kStrict);
  ASSERT_FALSE(strict.ok());
  EXPECT_EQ(strict.error().message, why);
  Result<std::string> warn = PlaceStep(s, TestRecipe(), TwoTib(), OnGpus({0, 1}), Roomy(), {}, kWarn);
  ASSERT_TRUE(warn.ok());
  EXPECT_EQ(warn.value(), "null");
  EXPECT_EQ(s.placement_notes, std::vector<std::string>{why});
  EXPECT_TRUE(s.bindings.empty());
}

TEST(StepSetup, APlacementThatDoesNotFit) {
  Topology t = TwoTib();
  ASSERT_TRUE(SetNumaFreeBytes(t, 0, 610 * kGiB).ok());
  StepSetup s = Dep4Setup();
  Result<std::string> strict = PlaceStep(s, TestRecipe(), t, OnGpus({0, 1, 2, 3}), Roomy(), {}, kStrict);
  ASSERT_FALSE(strict.ok());
  EXPECT_TRUE(Has(strict.error().message, "dep4 needs 756 GiB on NUMA node 0")) << strict.error().message;
  EXPECT_TRUE(s.placement_notes.empty());
  Result<std::string> warn = PlaceStep(s, TestRecipe(), t, OnGpus({0, 1, 2, 3}), Roomy(), {}, kWarn);
  ASSERT_TRUE(warn.ok());
  EXPECT_TRUE(Has(warn.value(), R"("verdict": "refused")")) << warn.value();
  ASSERT_EQ(s.placement_notes.size(), 1u);
  EXPECT_EQ(s.placement_notes[0], strict.error().message);
  EXPECT_EQ(s.bindings.size(), 2u);  // placed all the same
}

TEST(StepSetup, BindingsThatCannotBeMade) {
  Recipe flagless = TestRecipe();
  flagless.engine.numa_flags.clear();  // the one engine cannot place its workers
  StepSetup s = Dep4Setup(flagless);
  Result<std::string> strict = PlaceStep(s, flagless, TwoTib(), OnGpus({2, 3, 4, 5}), Roomy(), {}, kStrict);
  ASSERT_FALSE(strict.ok());
  EXPECT_TRUE(Has(strict.error().message, "span NUMA nodes 0-1")) << strict.error().message;
  Result<std::string> warn = PlaceStep(s, flagless, TwoTib(), OnGpus({2, 3, 4, 5}), Roomy(), {}, kWarn);
  ASSERT_TRUE(warn.ok());
  EXPECT_TRUE(Has(warn.value(), R"("verdict": "fits")")) << warn.value();
  EXPECT_EQ(s.placement_notes, std::vector<std::string>{strict.error().message});
  EXPECT_TRUE(s.bindings.empty());
  EXPECT_FALSE(s.plan.worker_numa_flags);
}

// With the recipe's engine.numa_flags, ranks spanning nodes are no
// shortfall: the plan is rendered again and the engine bound to CPUs only.
TEST(StepSetup, AnEngineSpanningNodesIsRenderedAgainWithItsWorkerFlags) {
  StepSetup s = Dep4Setup();
  Result<std::string> json = PlaceStep(s, TestRecipe(), TwoTib(), OnGpus({2, 3, 4, 5}), Roomy(), {}, kStrict);
  ASSERT_TRUE(json.ok()) << json.error().message;
  EXPECT_TRUE(s.placement_notes.empty());
  EXPECT_TRUE(s.plan.worker_numa_flags);
  ASSERT_EQ(s.request.gpu_places.size(), 4u);
  EXPECT_EQ(s.request.gpu_places[2].numa, 1);
  ASSERT_EQ(s.bindings.size(), 2u);
  EXPECT_FALSE(s.bindings[0].second.numa.has_value());
}

TEST(StepSetup, FailureReasonIsOneBoundedLine) {
  EXPECT_EQ(FailureReason(R"({"process":"engine","reason":"engine (pid 7) exited with status 1","pid":7})"),
            std::optional<std::string>("engine (pid 7) exited with status 1"));
  EXPECT_EQ(FailureReason(R"({"reason":"a\nb\tc"})"), std::optional<std::string>("a b c"));
  EXPECT_EQ(FailureReason(R"({"reason":")" + std::string(5000, 'x') + "\"}")->size(), 1003u);
  EXPECT_FALSE(FailureReason(""));
  EXPECT_FALSE(FailureReason("not json"));
  EXPECT_FALSE(FailureReason(R"({"reason":7})"));
  EXPECT_FALSE(FailureReason(R"({"reason":""})"));
  EXPECT_FALSE(FailureReason(R"(["reason"])"));
}

}  // namespace
}  // namespace ix
