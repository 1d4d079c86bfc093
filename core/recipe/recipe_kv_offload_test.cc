// The `kv_offload:` schema: what loads, and the located errors of what
// does not (docs/RECIPES.md).
#include <gtest/gtest.h>

#include "core/recipe/launch_plan.h"
#include "core/recipe/recipe.h"
#include "core/recipe/recipe_test_util.h"
#include "tests/support/test.h"

namespace ix {
namespace {

using test::LoadError;

const char kRecipe[] = R"(schema: 1
name: mini
variables:
  OPT: ""
engine:
  argv: [serve, --port, "${PORT}"]
kv_offload:
  t:
    vars:
      SEG: ${KV_OFFLOAD_GB_PER_RANK}GB
      ADDR: 127.0.0.1:${MASTER_PORT}
    engine_args:
      - --cfg
      - '{"bytes": ${KV_OFFLOAD_BYTES_PER_RANK}, "lazy": ${KV_LAZY_OFFLOAD}, "arm": "${ARM}"}'
      - {when: OPT, args: [--opt, "${OPT}"]}
    engine_env: {CFG: "${RESULT_DIR}/c.json"}
    files:
      - {name: c.json, text: "{\"master\": \"${ADDR}\", \"seg\": \"${SEG}\"}\n"}
    servers:
      - name: master
        ports: [MASTER_PORT]
        argv: [master, --port, "${MASTER_PORT}"]
        env: {GPUS_SEEN: "${GPU_COUNT}"}
        readiness:
          - tcp_listening: ${ADDR}
    host_memory:
      - {name: seg, per: dp_rank, bytes: "${SEG}", pinned: true}
      - {name: scratch, per: step, bytes: 1GiB}
arms:
  dp2:
    gpus: 2
    tp: 1
    ep: 1
    dp: 2
    ports: [PORT]
)";

TEST(RecipeKvOffload, ATierLoadsAndRenders) {
  Result<Recipe> r = LoadRecipeString(kRecipe, "r.yaml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const KvOffloadTier& t = r.value().kv_offload.at(0);
  EXPECT_EQ(t.Ports(), std::vector<std::string>{"MASTER_PORT"});
  EXPECT_EQ(t.needs, (std::vector<std::string>{"GPU_COUNT", "KV_OFFLOAD_BYTES_PER_RANK", "KV_OFFLOAD_GB_PER_RANK",
                                               "KV_LAZY_OFFLOAD", "RESULT_DIR"}));
  EXPECT_EQ(t.servers.at(0).log, "master.log");
  RenderRequest req;
  req.arm = "dp2";
  req.conc = 4;
  req.kv_offload = "t";
  req.total_cpu_dram_gb = 7;
  req.overrides = {{"OPT", "x"}};
  Result<LaunchPlan> p = RenderDryRun(r.value(), req);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p.value().processes.at(0).argv, (std::vector<std::string>{"master", "--port", "20001"}));
  EXPECT_EQ(p.value().processes.at(0).env, (EnvList{{"GPUS_SEEN", "2"}}));
  // 7 GB / 2 GPUs, integer divisions as bash does them; DP attention: eager.
  EXPECT_EQ(p.value().processes.at(1).argv,
            (std::vector<std::string>{"serve", "--port", "20000", "--cfg",
                                      R"({"bytes": 3500000000, "lazy": false, "arm": "dp2"})", "--opt", "x"}));
  EXPECT_EQ(p.value().processes.at(1).env, (EnvList{{"CFG", "RESULT_DIR/c.json"}}));
  EXPECT_EQ(p.value().files.at(0).text, "{\"master\": \"127.0.0.1:20001\", \"seg\": \"3GB\"}\n");
  ASSERT_EQ(p.value().host_memory.size(), 2u);
  EXPECT_EQ(p.value().host_memory[0].bytes_each, 3000000000u);
  EXPECT_EQ(p.value().host_memory[0].count, 2);
  EXPECT_EQ(p.value().host_memory[1].total_bytes, 1ull << 30);
}

TEST(RecipeKvOffload, LocatedErrors) {
  std::string m = LoadError(test::ReplaceOnce(kRecipe, "${ARM}", "${ARMM}"));
  EXPECT_NE(m.find("r.yaml:14:"), std::string::npos) << m;
  EXPECT_NE(m.find("field 'kv_offload.t.engine_args[1]': unknown variable ${ARMM} in arm 'dp2'"), std::string::npos) << m;
  m = LoadError(test::ReplaceOnce(test::ReplaceOnce(kRecipe, "SEG: ${KV_OFFLOAD_GB_PER_RANK}GB", "SEG: ${ADDR}"),
                                  "ADDR: 127.0.0.1:${MASTER_PORT}", "ADDR: x${SEG}"));
  EXPECT_NE(m.find("field 'kv_offload.t.vars': variables refer to each other in a cycle: SEG -> ADDR"),
            std::string::npos) << m;
  test::ExpectLoadErrors(kRecipe, {
      {"ports: [MASTER_PORT]", "ports: [PORT]", "'PORT' is both a port of the arm and a port of KV offload tier t"},
      {"when: OPT", "when: NOPE", "'NOPE' is not a recipe variable or a variable of the tier"},
      {"tcp_listening:", "tcp_open:", "allowed: http_ok, models_nonempty, tcp_listening"},
      {"per: dp_rank", "per: rank", "field 'kv_offload.t.host_memory[0].per'"},
      {"- name: master", "- name: engine", "'engine' is the name of a step process"},
      {"{name: c.json,", "{name: ../c.json,",
       "field 'kv_offload.t.files[0].name': file names are plain lower-case file names"},
      {"        env: {GPUS", "        restart: true\n        env: {GPUS", "restart"},
      // The tier builtins belong to tiers: the engine cannot use them.
      {"--port, \"${PORT}\"]", "--port, \"${PORT}\", \"${TOTAL_CPU_DRAM_GB}\"]",
       "unknown variable ${TOTAL_CPU_DRAM_GB}"},
      // ... nor may a recipe variable take one of their names.
      {"  OPT: \"\"\n", "  OPT: \"\"\n  GPU_COUNT: \"8\"\n",
       "'GPU_COUNT' is both a recipe variable and a KV offload builtin"},
  });
}

TEST(RecipeKvOffload, TcpListeningIsAReadinessKindEverywhere) {
  Result<Recipe> r = LoadRecipeString(
      test::ReplaceOnce(kRecipe, "  argv: [serve, --port, \"${PORT}\"]\n",
                        "  argv: [serve, --port, \"${PORT}\"]\n  readiness: [{tcp_listening: \"localhost:${PORT}\"}]\n"),
      "r.yaml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().engine.readiness.at(0).kind, ReadinessTemplate::Kind::kTcpListening);
}

}  // namespace
}  // namespace ix
