#include "core/recipe/recipe.h"
#include "tests/support/test.h"

#include <gtest/gtest.h>

#include <regex>

namespace ix {
namespace {

const char kRecipeDir[] = IX_SOURCE_DIR "/recipes";

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

std::string LoadError(const std::string& text) {
  Result<Recipe> r = LoadRecipeString(text, "r.yaml");
  EXPECT_FALSE(r.ok());
  return r.ok() ? "" : r.error().message;
}

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
  EXPECT_EQ(r.value().ArmNames(), (std::vector<std::string>{"tp4", "tep4", "dep4", "dep4-rankproc"}));
  EXPECT_EQ(r.value().FindArm("dep4")->dp_layout, DpLayout::kEngine);
  EXPECT_EQ(r.value().FindArm("dep4-rankproc")->dp_layout, DpLayout::kRankProcess);
  EXPECT_EQ(r.value().FindArm("dep4-rankproc")->rank_ports, std::vector<std::string>{"ENGINE_PORT"});
  EXPECT_EQ(r.value().engine.numa_flags.size(), 5u);
  ASSERT_EQ(r.value().host_memory.size(), 1u);
  EXPECT_EQ(r.value().host_memory[0].bytes, 189ull << 30);
  EXPECT_EQ(r.value().host_memory[0].per, HostMemoryNeed::Per::kDpRank);
  EXPECT_TRUE(r.value().router.has_value());
  EXPECT_EQ(r.value().serves, std::vector<std::string>{"dsv41flash-fp4-b300-vllm-agentic-dspark"});
}

TEST(Recipe, UndeclaredTemplateVariableIsALoadErrorWithLocation) {
  const std::string msg = LoadError(test::ReplaceOnce(kMinimal, "\"${MODEL}\"", "\"${MODLE}\""));
  EXPECT_NE(msg.find("r.yaml:7:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("field 'engine.argv[1]'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unknown variable ${MODLE} in arm 'tp2'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("declared: "), std::string::npos) << msg;
  EXPECT_NE(msg.find("MODEL"), std::string::npos) << msg;
}

TEST(Recipe, PortOfAnotherArmIsNotInScope) {
  // ENGINE_PORT comes only from the arm's vars; without it tp2 cannot render.
  const std::string msg = LoadError(test::ReplaceOnce(kMinimal, "    vars: {ENGINE_PORT: \"${PORT}\"}\n", ""));
  EXPECT_NE(msg.find("unknown variable ${ENGINE_PORT}"), std::string::npos) << msg;
}

TEST(Recipe, MissingFieldWrongTypeUnknownField) {
  EXPECT_NE(LoadError(test::ReplaceOnce(kMinimal, "    gpus: 2\n", "")).find("field 'arms.tp2.gpus': missing (required)"),
            std::string::npos);
  const std::string wrong = LoadError(test::ReplaceOnce(kMinimal, "gpus: 2", "gpus: two"));
  EXPECT_NE(wrong.find("r.yaml:14:11: field 'arms.tp2.gpus': expected a positive integer, got 'two'"),
            std::string::npos) << wrong;
  EXPECT_NE(LoadError(test::ReplaceOnce(kMinimal, "ports: [PORT]", "ports: PORT")).find("field 'arms.tp2.ports': expected a list"),
            std::string::npos);
  const std::string unknown = LoadError(test::ReplaceOnce(kMinimal, "    ep: 1\n", "    ep: 1\n    gpu_count: 2\n"));
  EXPECT_NE(unknown.find("field 'arms.tp2.gpu_count': unknown field; allowed: gpus, tp, ep, dp"),
            std::string::npos) << unknown;
  EXPECT_NE(LoadError(test::ReplaceOnce(kMinimal, "schema: 1", "schema: 7")).find("allowed: 1"), std::string::npos);
  EXPECT_NE(LoadError(test::ReplaceOnce(kMinimal, "engine:", "engines:")).find("unknown field; allowed: schema"),
            std::string::npos);
}

TEST(Recipe, StructuralRules) {
  EXPECT_NE(LoadError(test::ReplaceOnce(kMinimal, "tp: 2", "tp: 1")).find("tp x dp must equal gpus"), std::string::npos);
  EXPECT_NE(LoadError(test::ReplaceOnce(kMinimal, "{splice: par}", "{splice: parallel}"))
                .find("arm 'tp2' defines no fragment 'parallel'"),
            std::string::npos);
  EXPECT_NE(LoadError(test::ReplaceOnce(kMinimal, "{splice: par}, ", "")).find("fragment is never spliced"),
            std::string::npos);
  EXPECT_NE(LoadError(test::ReplaceOnce(kMinimal, "when: OPT", "when: NOPE")).find("not a recipe variable"),
            std::string::npos);
  EXPECT_NE(LoadError(test::ReplaceOnce(kMinimal, "    ep: 1\n", "    ep: 1\n    router: true\n"))
                .find("the recipe has no 'router' section"),
            std::string::npos);
  EXPECT_NE(LoadError(test::ReplaceOnce(kMinimal, "ports: [PORT]", "ports: [PORT, MODEL]")).find("names must be unique"),
            std::string::npos);
  EXPECT_NE(LoadError(test::ReplaceOnce(kMinimal, "ports: [PORT]", "ports: [PORT, PORT]")).find("given twice"),
            std::string::npos);
  EXPECT_NE(LoadError(test::ReplaceOnce(kMinimal, "ports: [PORT]", "ports: [PORT, CONC]")).find("a builtin variable"),
            std::string::npos);
  EXPECT_NE(LoadError(test::ReplaceOnce(kMinimal, "{ENGINE_PORT: \"${PORT}\"}", "{ENGINE_PORT: \"${X}\", X: \"${ENGINE_PORT}\"}"))
                .find("cycle: ENGINE_PORT -> X -> ENGINE_PORT"),
            std::string::npos);
  EXPECT_NE(LoadError(test::ReplaceOnce(kMinimal, "\"${MODEL}\"", "\"$MODEL\"")).find("lone '$'"), std::string::npos);
  EXPECT_NE(LoadError(test::ReplaceOnce(kMinimal, "name: mini", "name: Mini/../x")).find("is not a recipe name"),
            std::string::npos);
}

// DP_RANK, rank ports, per_rank and per_gpu items only where they have a value.
TEST(Recipe, RankAndGpuNamesOnlyWhereTheyHaveAValue) {
  EXPECT_NE(LoadError(test::ReplaceOnce(kMinimal, "[-tp, \"${TP}\"]", "[-tp, \"${DP_RANK}\"]"))
                .find("${DP_RANK} in arm 'tp2' has no value here"),
            std::string::npos);
  EXPECT_NE(LoadError(test::ReplaceOnce(kMinimal, "    ports: [PORT]\n", "    ports: [PORT]\n    rank_ports: [RP]\n"))
                .find("field 'arms.tp2.rank_ports': rank ports need dp_layout: rank-process"),
            std::string::npos);
  EXPECT_NE(LoadError(test::ReplaceOnce(kMinimal, "    ep: 1\n", "    ep: 1\n    dp_layout: ranks\n"))
                .find("allowed: engine, rank-process"),
            std::string::npos);
  EXPECT_NE(LoadError(test::ReplaceOnce(kMinimal, "[-tp, \"${TP}\"]", "[-tp, {per_gpu: \"${GPU_NUMA}\"}]"))
                .find("unknown field; allowed: per_rank"),
            std::string::npos);
  EXPECT_NE(LoadError(test::ReplaceOnce(kMinimal, "  readiness:\n", "  numa_flags: [--n, \"${GPU_NUMA}\"]\n  readiness:\n"))
                .find("${GPU_NUMA} has a value only in {per_gpu: ...} items"),
            std::string::npos);
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
