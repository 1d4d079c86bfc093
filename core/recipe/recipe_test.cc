#include "core/recipe/recipe.h"
#include "core/recipe/recipe_test_util.h"
#include "tests/support/test.h"

#include <gtest/gtest.h>

#include <regex>

namespace ix {
namespace {

using test::kRecipeDir;
using test::LoadError;

// A small valid recipe; tests break one thing at a time.
const char kMinimal[] = R"(schema: 1
name: mini
variables:
  MODEL: m
  OPT: ""
engine:
  argv: [serve, "${MODEL}", --port, "${ENGINE_PORT}", {splice: par}, {when: OPT, args: [--opt, "${OPT}"]}]
  readiness:
    - http_ok: http://localhost:${ENGINE_PORT}/health
client_env:
  URL: http://localhost:${PORT}
arms:
  tp2:
    gpus: 2
    tp: 2
    ep: 1
    dp: 1
    ports: [PORT]
    vars: {ENGINE_PORT: "${PORT}"}
    fragments: {par: [-tp, "${TP}"]}
)";

TEST(Recipe, MinimalLoads) {
  Result<Recipe> r = LoadRecipeString(kMinimal, "r.yaml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().name, "mini");
  EXPECT_EQ(r.value().ArmNames(), std::vector<std::string>{"tp2"});
  EXPECT_EQ(r.value().engine.log, "server.log");
  EXPECT_EQ(r.value().engine.argv.size(), 6u);
}

TEST(Recipe, TheShippedRecipeLoadsWithItsArms) {
  Result<Recipe> r = LoadRecipeByName(kRecipeDir, "dsv41flash-fp4-b300-vllm");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().ArmNames(),
            (std::vector<std::string>{"tp4", "tep4", "dep4", "dep4-rankproc", "dep16", "tp8pp2"}));
  const Arm* dep16 = r.value().FindArm("dep16");
  EXPECT_EQ(dep16->nodes, 2);
  EXPECT_EQ(dep16->gpus, 8);
  EXPECT_EQ(dep16->step_ports, (std::vector<std::string>{"PORT", "DP_RPC_PORT"}));
  ASSERT_EQ(dep16->others_fragments.size(), 1u);
  EXPECT_EQ(dep16->others_fragments[0].first, "parallel");
  const Arm* tp8pp2 = r.value().FindArm("tp8pp2");
  EXPECT_EQ(tp8pp2->pp, 2);
  EXPECT_EQ(tp8pp2->step_ports, (std::vector<std::string>{"PORT", "MASTER_PORT"}));
  EXPECT_EQ(r.value().FindArm("tp4")->nodes, 1);
  EXPECT_EQ(r.value().FindArm("tp4")->pp, 1);
  EXPECT_EQ(r.value().FindArm("dep4")->dp_layout, DpLayout::kEngine);
  EXPECT_EQ(r.value().FindArm("dep4-rankproc")->dp_layout, DpLayout::kRankProcess);
  EXPECT_EQ(r.value().FindArm("dep4-rankproc")->rank_ports, std::vector<std::string>{"ENGINE_PORT"});
  EXPECT_EQ(r.value().engine.numa_flags.size(), 5u);
  ASSERT_EQ(r.value().host_memory.size(), 1u);
  EXPECT_EQ(r.value().host_memory[0].bytes, 189ull << 30);
  EXPECT_EQ(r.value().host_memory[0].per, HostMemoryNeed::Per::kDpRank);
  EXPECT_TRUE(r.value().router.has_value());
  EXPECT_EQ(r.value().serves, (std::vector<std::string>{"dsv41flash-fp4-b300-vllm-agentic-dspark",
                                                        "dsv41flash-fp4-b300-vllm", "dsv41flash-fp4-b300-vllm-multinode"}));
}

TEST(Recipe, UndeclaredTemplateVariableIsALoadErrorWithLocation) {
  const std::string msg = LoadError(test::ReplaceOnce(kMinimal, "\"${MODEL}\"", "\"${MODLE}\""));
  EXPECT_NE(msg.find("r.yaml:7:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("field 'engine.argv[1]'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unknown variable ${MODLE} in arm 'tp2'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("declared: "), std::string::npos) << msg;
  EXPECT_NE(msg.find("MODEL"), std::string::npos) << msg;
}

TEST(Recipe, KvOffloadTiersAreNamedAndChecked) {
  const std::string tiers = "kv_offload:\n  vllm-simple: {doc: host DRAM}\n  mooncake: {}\narms:";
  Result<Recipe> r = LoadRecipeString(test::ReplaceOnce(kMinimal, "arms:", tiers), "r.yaml");
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r.value().kv_offload.size(), 2u);
  EXPECT_EQ(r.value().kv_offload[0].doc, "host DRAM");
  EXPECT_NE(r.value().FindKvOffload("mooncake"), nullptr);
  EXPECT_EQ(r.value().FindKvOffload("lmcache"), nullptr);
  test::ExpectLoadErrors(kMinimal, {
      {"arms:", "kv_offload:\n  none: {}\narms:", "field 'kv_offload.none': 'none' is not a tier name"},
      {"arms:", "kv_offload:\n  x: {size: 1}\narms:", "size"},
  });
}

TEST(Recipe, PortOfAnotherArmIsNotInScope) {
  // ENGINE_PORT comes only from the arm's vars; without it tp2 cannot render.
  const std::string msg = LoadError(test::ReplaceOnce(kMinimal, "    vars: {ENGINE_PORT: \"${PORT}\"}\n", ""));
  EXPECT_NE(msg.find("unknown variable ${ENGINE_PORT}"), std::string::npos) << msg;
}

TEST(Recipe, MissingFieldWrongTypeUnknownField) {
  test::ExpectLoadErrors(kMinimal, {
      {"    gpus: 2\n", "", "field 'arms.tp2.gpus': missing (required)"},
      {"gpus: 2", "gpus: two", "r.yaml:14:11: field 'arms.tp2.gpus': expected a positive integer, got 'two'"},
      {"ports: [PORT]", "ports: PORT", "field 'arms.tp2.ports': expected a list"},
      {"    ep: 1\n", "    ep: 1\n    gpu_count: 2\n",
       "field 'arms.tp2.gpu_count': unknown field; allowed: gpus, tp, ep, dp"},
      {"schema: 1", "schema: 7", "allowed: 1"},
      {"engine:", "engines:", "unknown field; allowed: schema"},
  });
}

TEST(Recipe, StructuralRules) {
  test::ExpectLoadErrors(kMinimal, {
      {"tp: 2", "tp: 1", "r.yaml:14:5: field 'arms.tp2': tp x pp x dp must equal gpus x nodes (1 x 1 x 1 != 2 x 1"},
      {"{splice: par}", "{splice: parallel}", "arm 'tp2' defines no fragment 'parallel'"},
      {"{splice: par}, ", "", "fragment is never spliced"},
      {"when: OPT", "when: NOPE", "not a recipe variable"},
      {"    ep: 1\n", "    ep: 1\n    router: true\n", "the recipe has no 'router' section"},
      {"ports: [PORT]", "ports: [PORT, MODEL]", "names must be unique"},
      {"ports: [PORT]", "ports: [PORT, PORT]", "given twice"},
      {"ports: [PORT]", "ports: [PORT, CONC]", "a builtin variable"},
      {"{ENGINE_PORT: \"${PORT}\"}", "{ENGINE_PORT: \"${X}\", X: \"${ENGINE_PORT}\"}",
       "cycle: ENGINE_PORT -> X -> ENGINE_PORT"},
      {"\"${MODEL}\"", "\"$MODEL\"", "lone '$'"},
      {"name: mini", "name: Mini/../x", "is not a recipe name"},
  });
}

// DP_RANK, rank ports, per_rank and per_gpu items only where they have a value.
TEST(Recipe, RankAndGpuNamesOnlyWhereTheyHaveAValue) {
  test::ExpectLoadErrors(kMinimal, {
      {"[-tp, \"${TP}\"]", "[-tp, \"${DP_RANK}\"]", "${DP_RANK} in arm 'tp2' has no value here"},
      {"    ports: [PORT]\n", "    ports: [PORT]\n    rank_ports: [RP]\n",
       "field 'arms.tp2.rank_ports': rank ports need dp_layout: rank-process"},
      {"    ep: 1\n", "    ep: 1\n    dp_layout: ranks\n", "allowed: engine, rank-process"},
      {"[-tp, \"${TP}\"]", "[-tp, {per_gpu: \"${GPU_NUMA}\"}]", "unknown field; allowed: per_rank"},
      {"  readiness:\n", "  numa_flags: [--n, \"${GPU_NUMA}\"]\n  readiness:\n",
       "${GPU_NUMA} has a value only in {per_gpu: ...} items"},
  });
  // A rank-process arm: DP_RANK and a rank port in the engine are fine.
  std::string rp = test::ReplaceOnce(kMinimal, "    ep: 1\n    dp: 1\n", "    ep: 1\n    dp: 1\n    dp_layout: rank-process\n");
  rp = test::ReplaceOnce(rp, "    vars: {ENGINE_PORT: \"${PORT}\"}\n", "    rank_ports: [ENGINE_PORT]\n");
  rp = test::ReplaceOnce(rp, "[-tp, \"${TP}\"]", "[-tp, \"${TP}\", --rank, \"${DP_RANK}\"]");
  Result<Recipe> ok = LoadRecipeString(rp, "r.yaml");
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok.value().arms[0].rank_ports, std::vector<std::string>{"ENGINE_PORT"});
  // ... but not in the client environment, which is not rendered per rank.
  EXPECT_NE(LoadError(test::ReplaceOnce(rp, "URL: http://localhost:${PORT}", "URL: \"${DP_RANK}\""))
                .find("has no value here"),
            std::string::npos);
}

// An arm across two nodes of 2 GPUs: DP 4 over the nodes, the others
// adding --headless; tests break one thing at a time.
const char kAcross[] = R"(schema: 1
name: across
engine:
  argv: [serve, --port, "${ENGINE_PORT}", {splice: par}]
  readiness:
    - http_ok: http://localhost:${ENGINE_PORT}/health
client_env:
  URL: http://${HEAD_ADDR}:${PORT}
arms:
  dp4:
    nodes: 2
    gpus: 2
    tp: 1
    ep: 4
    dp: 4
    ports: [ENGINE_PORT]
    step_ports: [PORT, RPC]
    fragments: {par: [-dp, "${DP}", -dpl, "${DP_LOCAL}", -a, "${HEAD_ADDR}", -r, "${RPC}"]}
    others:
      fragments: {par: [-dp, "${DP}", -dpl, "${DP_LOCAL}", -dpr, "${DP_START_RANK}", --headless]}
)";

TEST(Recipe, AnArmAcrossNodesLoads) {
  Result<Recipe> r = LoadRecipeString(kAcross, "r.yaml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Arm& arm = r.value().arms[0];
  EXPECT_EQ(arm.nodes, 2);
  EXPECT_EQ(arm.pp, 1);
  EXPECT_EQ(arm.ports, std::vector<std::string>{"ENGINE_PORT"});
  EXPECT_EQ(arm.step_ports, (std::vector<std::string>{"PORT", "RPC"}));
  ASSERT_EQ(arm.others_fragments.size(), 1u);
  EXPECT_EQ(arm.others_fragments[0].second.size(), 7u);
  // Pipeline stages across the nodes instead: dp 1, pp 2.
  std::string pp = test::ReplaceOnce(kAcross, "    tp: 1\n    ep: 4\n    dp: 4\n", "    tp: 2\n    pp: 2\n    ep: 1\n    dp: 1\n");
  Result<Recipe> p = LoadRecipeString(pp, "r.yaml");
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p.value().arms[0].pp, 2);
  // The node builtins are names of single-node arms too.
  Result<Recipe> one = LoadRecipeString(
      test::ReplaceOnce(kMinimal, "[-tp, \"${TP}\"]", "[-tp, \"${TP}\", \"${NODE_RANK}${NODES}${HEAD_ADDR}${DP_LOCAL}${DP_START_RANK}${PP}\"]"),
      "r.yaml");
  EXPECT_TRUE(one.ok()) << one.error().message;
}

TEST(Recipe, ShapeRulesAcrossNodes) {
  const std::string product = LoadError(test::ReplaceOnce(kAcross, "    dp: 4\n", "    dp: 2\n"));
  EXPECT_NE(product.find("field 'arms.dp4': tp x pp x dp must equal gpus x nodes (1 x 1 x 2 != 2 x 2; gpus is per node)"),
            std::string::npos) << product;
  // DP 3 over 2 nodes does not split.
  std::string uneven = test::ReplaceOnce(kAcross, "    nodes: 2\n    gpus: 2\n", "    nodes: 2\n    gpus: 3\n");
  uneven = test::ReplaceOnce(uneven, "    tp: 1\n    ep: 4\n    dp: 4\n", "    tp: 2\n    ep: 1\n    dp: 3\n");
  const std::string split = LoadError(uneven);
  EXPECT_NE(split.find("r.yaml:11:5: field 'arms.dp4.nodes': an arm across 2 nodes needs either pp: 1 and dp divisible "
                       "by nodes (data parallel across nodes) or dp: 1 and pp divisible by nodes (pipeline stages across "
                       "nodes); got pp 1, dp 3"),
            std::string::npos) << split;
  test::ExpectLoadErrors(kAcross, {
      // TP alone across nodes (dp 1, pp 1) is neither mode.
      {"    tp: 1\n    ep: 4\n    dp: 4\n", "    tp: 4\n    ep: 1\n    dp: 1\n", "got pp 1, dp 1"},
      // Pipeline stages and DP ranks together are refused, on one node too.
      {"    tp: 1\n    ep: 4\n    dp: 4\n", "    tp: 1\n    pp: 2\n    ep: 1\n    dp: 2\n", "pp > 1 needs dp: 1"},
      {"ep: 4", "ep: 3", "field 'arms.dp4.ep': ep must divide gpus x nodes (4)"},
      {"nodes: 2", "nodes: 0", "field 'arms.dp4.nodes': expected a positive integer"},
      {"    tp: 1\n", "    tp: 1\n    pp: x\n", "field 'arms.dp4.pp': expected a positive integer"},
      {"    ep: 4\n", "    ep: 4\n    dp_layout: rank-process\n",
       "field 'arms.dp4.dp_layout': rank-process is single-node only"},
  });
}

TEST(Recipe, StepPortsAndOthersOnlyAcrossNodes) {
  std::string one_node = test::ReplaceOnce(kAcross, "    nodes: 2\n    gpus: 2\n", "    nodes: 1\n    gpus: 4\n");
  one_node = one_node.substr(0, one_node.find("    others:\n"));
  const std::string sp = LoadError(one_node);
  EXPECT_NE(sp.find("field 'arms.dp4.step_ports': only for an arm across nodes (nodes > 1)"), std::string::npos) << sp;
  std::string others = test::ReplaceOnce(kAcross, "    nodes: 2\n    gpus: 2\n", "    nodes: 1\n    gpus: 4\n");
  others = test::ReplaceOnce(others, "    ports: [ENGINE_PORT]\n    step_ports: [PORT, RPC]\n", "    ports: [ENGINE_PORT, PORT, RPC]\n");
  const std::string o = LoadError(others);
  EXPECT_NE(o.find("field 'arms.dp4.others': only for an arm across nodes (nodes > 1)"), std::string::npos) << o;
  test::ExpectLoadErrors(kAcross, {
      // The step ports are names of their own: not a port as well.
      {"ports: [ENGINE_PORT]", "ports: [ENGINE_PORT, RPC]", "field 'arms.dp4.step_ports[1]': port 'RPC' given twice"},
      {"step_ports: [PORT, RPC]", "step_ports: [PORT, rpc]", "port names are upper-case"},
      // others replaces fragments the arm has, and holds only fragments.
      {"{par: [-dp, \"${DP}\", -dpl, \"${DP_LOCAL}\", -dpr",
       "{parx: [-dp, \"${DP}\", -dpl, \"${DP_LOCAL}\", -dpr",
       "r.yaml:20:19: field 'arms.dp4.others.fragments.parx': replaces fragment 'parx', which the arm does not define "
       "in arms.dp4.fragments"},
      {"    others:\n      fragments:", "    others:\n      frags:",
       "field 'arms.dp4.others.frags': unknown field; allowed: fragments"},
      // Their templates are checked like the engine's.
      {"--headless]", "--headless, \"${NOPE}\"]",
       "field 'arms.dp4.others.fragments.par[7]': unknown variable ${NOPE} in arm 'dp4'"},
      {"--headless]", "--headless, \"${DP_RANK}\"]", "has no value here"},
      // A step port collides with a recipe variable like any other port.
      {"step_ports: [PORT, RPC]", "step_ports: [PORT, NODES]",
       "'NODES' is both a builtin variable and a step port of the arm"},
  });
}

TEST(Recipe, EmptyNonYamlAndNonMappingFiles) {
  EXPECT_EQ(LoadError(""), "r.yaml: file is empty, expected a YAML mapping");
  EXPECT_NE(LoadError("arms: [unclosed\n").find("r.yaml:"), std::string::npos);
  EXPECT_NE(LoadError("arms: [unclosed\n").find("not valid YAML"), std::string::npos);
  EXPECT_NE(LoadError("just some text\n").find("a recipe must be a YAML mapping"), std::string::npos);
  EXPECT_NE(LoadError("- a\n- b\n").find("a recipe must be a YAML mapping"), std::string::npos);
}

TEST(Recipe, UnknownRecipeListsAvailable) {
  Result<Recipe> r = LoadRecipeByName(kRecipeDir, "nope");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("unknown recipe 'nope'"), std::string::npos);
  EXPECT_NE(r.error().message.find("available: dsv41flash-fp4-b300-vllm"), std::string::npos);
  EXPECT_FALSE(LoadRecipeByName(kRecipeDir, "../recipes/dsv41flash-fp4-b300-vllm").ok());
}

}  // namespace
}  // namespace ix
