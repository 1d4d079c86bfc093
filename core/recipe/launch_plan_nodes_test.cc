// Plans of arms across nodes (docs/MULTINODE.md): one plan per node. The
// expected argv are vLLM's documented multi-node command lines, typed here,
// not copied from this code's output.
#include "core/recipe/launch_plan.h"
#include "core/recipe/recipe_test_util.h"
#include "tests/support/test.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace ix {
namespace {

constexpr uint64_t kGiB = 1ull << 30;

// The seed recipe (SeedRecipeTest's recipe_) rendered.
class NodesPlanTest : public test::SeedRecipeTest {
 protected:
  // Node `node` of `arm`: local ports from that node's broker (different
  // numbers on each node), step ports the same on every node.
  RenderRequest Request(const std::string& arm, int64_t node, int64_t conc = 64) const {
    RenderRequest req;
    req.arm = arm;
    req.conc = conc;
    req.node_rank = node;
    req.head_addr = "10.0.0.1";
    const int local = 23000 + 100 * static_cast<int>(node);
    if (arm == "dep16") {
      req.ports = {{"ENGINE_PORT", local}, {"ROUTER_METRICS_PORT", local + 1}, {"PORT", 30000}, {"DP_RPC_PORT", 30001}};
    } else {
      req.ports = {{"PORT", 30000}, {"MASTER_PORT", 30001}};
    }
    return req;
  }

  static std::string Get(const EnvList& env, const std::string& k) {
    for (const auto& [n, v] : env) {
      if (n == k) return v;
    }
    return "<unset>";
  }

  // The arguments from `flag` (inclusive) to the next --language-model-only.
  static std::vector<std::string> From(const std::vector<std::string>& argv, const std::string& flag) {
    auto begin = std::find(argv.begin(), argv.end(), flag);
    auto end = std::find(begin, argv.end(), std::string("--language-model-only"));
    return std::vector<std::string>(begin, end);
  }

};

TEST_F(NodesPlanTest, TheArmsNameTheirLocalAndStepPortsApart) {
  EXPECT_EQ(PortNames(recipe_, "dep16").value(), (std::vector<std::string>{"ENGINE_PORT", "ROUTER_METRICS_PORT"}));
  EXPECT_EQ(StepPortNames(recipe_, "dep16").value(), (std::vector<std::string>{"PORT", "DP_RPC_PORT"}));
  EXPECT_TRUE(PortNames(recipe_, "tp8pp2").value().empty());
  EXPECT_EQ(StepPortNames(recipe_, "tp8pp2").value(), (std::vector<std::string>{"PORT", "MASTER_PORT"}));
  EXPECT_TRUE(StepPortNames(recipe_, "tp4").value().empty());
  Result<std::vector<std::string>> none = StepPortNames(recipe_, "dep99");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("unknown arm 'dep99'"), std::string::npos);
}

// The head: the engine with 8 of the 16 ranks and the API, the router in
// front of it on the step's PORT.
TEST_F(NodesPlanTest, Dep16HeadServesTheApiBehindTheRouter) {
  Result<LaunchPlan> plan = RenderPlan(recipe_, Request("dep16", 0));
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const LaunchPlan& p = plan.value();
  EXPECT_EQ(p.nodes, 2);
  EXPECT_EQ(p.node_rank, 0);
  EXPECT_EQ(p.head_addr, "10.0.0.1");
  EXPECT_EQ(p.pp, 1);
  EXPECT_EQ(p.gpus, 8);
  EXPECT_EQ(p.dp, 16);
  EXPECT_EQ(p.step_ports, (std::vector<std::string>{"PORT", "DP_RPC_PORT"}));
  EXPECT_EQ(p.ports, (PortList{{"ENGINE_PORT", 23000}, {"ROUTER_METRICS_PORT", 23001}, {"PORT", 30000}, {"DP_RPC_PORT", 30001}}));
  ASSERT_EQ(p.ranks.size(), 8u);
  for (int64_t i = 0; i < 8; ++i) {
    EXPECT_EQ(p.ranks[i].rank, i);
    EXPECT_EQ(p.ranks[i].gpus, std::vector<int64_t>{i});
  }
  ASSERT_EQ(p.processes.size(), 2u);
  const PlannedProcess& engine = p.processes[0];
  EXPECT_EQ(From(engine.argv, "--port"),
            (std::vector<std::string>{"--port", "23000", "--tensor-parallel-size", "1", "--data-parallel-size", "16",
                                      "--data-parallel-size-local", "8", "--data-parallel-address", "10.0.0.1",
                                      "--data-parallel-rpc-port", "30001", "--enable-expert-parallel",
                                      "--gpu-memory-utilization", "0.85"}));
  ASSERT_EQ(engine.readiness.size(), 2u);
  EXPECT_EQ(engine.readiness[0].kind, ReadinessTemplate::Kind::kHttpOk);
  EXPECT_EQ(engine.readiness[0].url, "http://localhost:23000/health");
  EXPECT_EQ(Get(engine.env, "PYTORCH_ALLOC_CONF"), "expandable_segments:True");
  const PlannedProcess& router = p.processes[1];
  EXPECT_EQ(router.name, "router");
  EXPECT_EQ(From(router.argv, "--worker-urls"),
            (std::vector<std::string>{"--worker-urls", "http://localhost:23000", "--policy", "consistent_hash",
                                      "--intra-node-data-parallel-size", "16", "--host", "0.0.0.0", "--port", "30000",
                                      "--prometheus-host", "127.0.0.1", "--prometheus-port", "23001",
                                      "--request-timeout-secs", "14400", "--disable-retries"}));
  // The CUDA-graph batch is over the step's 16 ranks: 2 x 64 / 16 x 6 -> 64.
  EXPECT_EQ(Get(p.variables, "CAPTURE"), "64");
  EXPECT_EQ(Get(p.variables, "DP_LOCAL"), "8");
  EXPECT_EQ(Get(p.variables, "DP_START_RANK"), "0");
  EXPECT_EQ(Get(p.variables, "NODES"), "2");
  // The head by its address, so the same URL is right on every node.
  EXPECT_EQ(Get(p.client_env, "AIPERF_SERVER_URL"), "http://10.0.0.1:30000");
  ASSERT_EQ(p.host_memory.size(), 1u);
  EXPECT_EQ(p.host_memory[0].count, 8);  // this node's ranks: 1512 GiB, 756 GiB per socket
  EXPECT_EQ(p.host_memory[0].total_bytes, 8 * 189 * kGiB);
}

// Node 1: ranks 8-15 on its own GPUs 0-7, headless, no router; ready when
// connected to the head.
TEST_F(NodesPlanTest, Dep16OtherNodeRunsItsRanksHeadless) {
  Result<LaunchPlan> plan = RenderPlan(recipe_, Request("dep16", 1));
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const LaunchPlan& p = plan.value();
  EXPECT_EQ(p.node_rank, 1);
  ASSERT_EQ(p.ranks.size(), 8u);
  for (int64_t i = 0; i < 8; ++i) {
    EXPECT_EQ(p.ranks[i].rank, 8 + i);
    EXPECT_EQ(p.ranks[i].gpus, std::vector<int64_t>{i});
  }
  ASSERT_EQ(p.processes.size(), 1u);
  const PlannedProcess& engine = p.processes[0];
  EXPECT_EQ(engine.name, "engine");
  EXPECT_EQ(From(engine.argv, "--port"),
            (std::vector<std::string>{"--port", "23100", "--tensor-parallel-size", "1", "--data-parallel-size", "16",
                                      "--data-parallel-size-local", "8", "--data-parallel-address", "10.0.0.1",
                                      "--data-parallel-rpc-port", "30001", "--enable-expert-parallel",
                                      "--gpu-memory-utilization", "0.85", "--data-parallel-start-rank", "8",
                                      "--headless"}));
  ASSERT_EQ(engine.readiness.size(), 1u);
  EXPECT_EQ(engine.readiness[0].kind, ReadinessTemplate::Kind::kConnected);
  EXPECT_EQ(engine.readiness[0].url, "10.0.0.1");
  EXPECT_EQ(std::string(ReadinessKindName(engine.readiness[0].kind)), "connected");
  EXPECT_EQ(Get(p.variables, "DP_START_RANK"), "8");
  EXPECT_EQ(p.host_memory[0].count, 8);
}

TEST_F(NodesPlanTest, Tp8pp2SplitsThePipelineOverTheNodes) {
  for (int64_t node : {0, 1}) {
    Result<LaunchPlan> plan = RenderPlan(recipe_, Request("tp8pp2", node));
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    const LaunchPlan& p = plan.value();
    EXPECT_EQ(p.pp, 2);
    ASSERT_EQ(p.ranks.size(), 1u);
    EXPECT_EQ(p.ranks[0].rank, 0);
    EXPECT_EQ(p.ranks[0].gpus, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
    ASSERT_EQ(p.processes.size(), 1u);
    std::vector<std::string> expected = {"--port", "30000", "--tensor-parallel-size", "8", "--pipeline-parallel-size",
                                         "2", "--nnodes", "2", "--node-rank", std::to_string(node), "--master-addr",
                                         "10.0.0.1", "--master-port", "30001"};
    if (node == 1) expected.push_back("--headless");
    EXPECT_EQ(From(p.processes[0].argv, "--port"), expected);
    EXPECT_EQ(p.processes[0].readiness.size(), node == 0 ? 2u : 1u);
    EXPECT_EQ(p.processes[0].readiness[0].kind,
              node == 0 ? ReadinessTemplate::Kind::kHttpOk : ReadinessTemplate::Kind::kConnected);
    EXPECT_EQ(p.host_memory[0].count, 1);
  }
}

TEST_F(NodesPlanTest, BadNodeRequests) {
  RenderRequest req = Request("dep16", 2);
  Result<LaunchPlan> plan = RenderPlan(recipe_, req);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.error().message,
            "dsv41flash-fp4-b300-vllm arm dep16: node rank 2 is outside 0..1 (the arm runs on 2 nodes)");
  req.node_rank = -1;
  EXPECT_FALSE(RenderPlan(recipe_, req).ok());
  RenderRequest one;
  one.arm = "tp4";
  one.conc = 8;
  one.node_rank = 1;
  one.ports = {{"PORT", 8000}};
  ASSERT_FALSE(RenderPlan(recipe_, one).ok());
  EXPECT_NE(RenderPlan(recipe_, one).error().message.find("node rank 1 is outside 0..0 (the arm runs on 1 node)"),
            std::string::npos);
  req = Request("dep16", 1);
  req.head_addr = "";
  ASSERT_FALSE(RenderPlan(recipe_, req).ok());
  EXPECT_NE(RenderPlan(recipe_, req).error().message.find("needs the head's address"), std::string::npos);
  req = Request("dep16", 0);
  req.ports.pop_back();
  ASSERT_FALSE(RenderPlan(recipe_, req).ok());
  EXPECT_NE(RenderPlan(recipe_, req).error().message.find("no port number given for DP_RPC_PORT"), std::string::npos);
  req = Request("dep16", 0);
  req.ports.back().second = 23000;  // a step port equal to a local one
  ASSERT_FALSE(RenderPlan(recipe_, req).ok());
  EXPECT_NE(RenderPlan(recipe_, req).error().message.find("port 23000 given to two names"), std::string::npos);
}

TEST_F(NodesPlanTest, DryRunFillsStepPortsAndTheHeadAddress) {
  RenderRequest req;
  req.arm = "dep16";
  req.conc = 64;
  req.node_rank = 1;
  Result<LaunchPlan> plan = RenderDryRun(recipe_, req);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(plan.value().head_addr, "HEAD_ADDR");
  EXPECT_EQ(plan.value().ports,
            (PortList{{"ENGINE_PORT", 20000}, {"ROUTER_METRICS_PORT", 20001}, {"PORT", 20002}, {"DP_RPC_PORT", 20003}}));
  req.head_addr = "192.0.2.7";
  EXPECT_EQ(RenderDryRun(recipe_, req).value().processes[0].readiness[0].url, "192.0.2.7");
}

// A single-node plan records no node builtins and writes no node fields, so
// it reads as before; its HEAD_ADDR is the loopback address.
TEST(NodesPlan, SingleNodePlansKeepTheirShape) {
  const char kOne[] = R"(schema: 1
name: one
engine:
  argv: [serve, --addr, "${HEAD_ADDR}", --node, "${NODE_RANK}/${NODES}", --dp, "${DP_LOCAL}@${DP_START_RANK}", --pp, "${PP}"]
arms:
  a: {gpus: 2, tp: 1, ep: 1, dp: 2, ports: [PORT]}
)";
  Result<Recipe> r = LoadRecipeString(kOne, "one.yaml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  Result<LaunchPlan> plan = RenderDryRun(r.value(), {.arm = "a", .conc = 2});
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(plan.value().processes[0].argv,
            (std::vector<std::string>{"serve", "--addr", "127.0.0.1", "--node", "0/1", "--dp", "2@0", "--pp", "1"}));
  EXPECT_EQ(plan.value().head_addr, "");
  for (const auto& [k, v] : plan.value().variables) {
    EXPECT_TRUE(k != "NODE_RANK" && k != "HEAD_ADDR" && k != "PP" && k != "DP_LOCAL") << k;
  }
  const std::string json = PlanToJson(plan.value(), false);
  for (const char* key : {"\"pp\"", "\"nodes\"", "\"node_rank\"", "\"head_addr\"", "\"step_ports\""}) {
    EXPECT_EQ(json.find(key), std::string::npos) << key;
  }
}

TEST_F(NodesPlanTest, JsonRoundTripsTheNodeFields) {
  for (const char* arm : {"dep16", "tp8pp2"}) {
    for (int64_t node : {0, 1}) {
      Result<LaunchPlan> plan = RenderPlan(recipe_, Request(arm, node));
      ASSERT_TRUE(plan.ok()) << plan.error().message;
      const std::string json = PlanToJson(plan.value(), true);
      Result<LaunchPlan> back = PlanFromJson(json, "plan.json");
      ASSERT_TRUE(back.ok()) << back.error().message;
      EXPECT_EQ(back.value().nodes, 2);
      EXPECT_EQ(back.value().node_rank, node);
      EXPECT_EQ(back.value().head_addr, "10.0.0.1");
      EXPECT_EQ(back.value().pp, plan.value().pp);
      EXPECT_EQ(back.value().step_ports, plan.value().step_ports);
      EXPECT_EQ(back.value().processes[0].readiness[0].kind, plan.value().processes[0].readiness[0].kind);
      EXPECT_EQ(PlanToJson(back.value(), true), json) << arm << " node " << node;
    }
  }
}

TEST_F(NodesPlanTest, ABrokenNodeFieldIsNamed) {
  const std::string json = PlanToJson(RenderPlan(recipe_, Request("dep16", 1)).value(), false);
  auto fails = [&](const std::string& from, const std::string& to) {
    Result<LaunchPlan> r = PlanFromJson(test::ReplaceOnce(json, from, to), "p.json");
    return r.ok() ? std::string("<ok>") : r.error().message;
  };
  EXPECT_EQ(fails("\"node_rank\":1", "\"node_rank\":2"), "p.json: field 'node_rank' is outside 0..1");
  EXPECT_EQ(fails("\"head_addr\":\"10.0.0.1\"", "\"head_addr\":\"\""), "p.json: field 'head_addr' is empty");
  EXPECT_EQ(fails("\"step_ports\":[\"PORT\"", "\"step_ports\":[\"NOPE\""),
            "p.json: field 'step_ports' names NOPE, which is not in ports");
  EXPECT_EQ(fails("\"kind\":\"connected\"", "\"kind\":\"linked\""),
            "p.json: field 'processes[0].readiness[0].kind' is not http_ok, models_nonempty, connected or tcp_listening");
  EXPECT_EQ(fails("\"nodes\":2,", ""), "p.json: field 'plan.nodes' is missing");
  EXPECT_EQ(fails("\"pp\":1,", "\"pp\":0,"), "p.json: field 'pp' is not a positive integer");
}

}  // namespace
}  // namespace ix
