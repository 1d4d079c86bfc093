// The `hang:` section: its load errors, the checks it renders into a plan
// for each layout, and their JSON round trip (what ix-stepd reads).
#include "core/recipe/launch_plan.h"
#include "core/recipe/recipe.h"
#include "core/recipe/recipe_test_util.h"
#include "tests/support/test.h"

#include <gtest/gtest.h>

namespace ix {
namespace {

using test::kRecipeDir;
using test::LoadError;

// A recipe with a router; `hang` is appended to it.
std::string WithHang(const std::string& hang) {
  return R"(schema: 1
name: mini
engine:
  argv: [serve, --port, "${ENGINE_PORT}"]
  readiness:
    - http_ok: http://localhost:${ENGINE_PORT}/health
router:
  argv: [route, --port, "${PORT}", --metrics, "${METRICS_PORT}"]
  readiness:
    - http_ok: http://localhost:${PORT}/health
arms:
  tp2: {gpus: 2, tp: 2, ep: 1, dp: 1, router: true, ports: [PORT, ENGINE_PORT, METRICS_PORT]}
)" + hang;
}

const char kEngineOnly[] = R"(hang:
  after: 60
  engine:
    metrics: /metrics
    busy: [running]
    progress: [tokens_total]
)";

TEST(RecipeHang, LoadsAndDefaultsOff) {
  Result<Recipe> none = LoadRecipeString(WithHang(""), "r.yaml");
  ASSERT_TRUE(none.ok()) << none.error().message;
  EXPECT_FALSE(none.value().hang);
  Result<Recipe> r = LoadRecipeString(WithHang(kEngineOnly), "r.yaml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_TRUE(r.value().hang && r.value().hang->engine);
  EXPECT_EQ(r.value().hang->after_s, 60);
  EXPECT_TRUE(r.value().hang->engine->on_origin);
  EXPECT_FALSE(r.value().hang->router);
}

TEST(RecipeHang, LoadErrorsAreLocated) {
  EXPECT_EQ(LoadError(WithHang("hang:\n  after: 86401\n  engine: {metrics: /m, busy: [a], progress: [b]}\n")),
            "r.yaml:14:10: field 'hang.after': seconds from 1 to 86400");
  EXPECT_NE(LoadError(WithHang("hang:\n  after: 0\n  engine: {metrics: /m, busy: [a], progress: [b]}\n")), "");
  EXPECT_EQ(LoadError(WithHang("hang:\n  after: 5\n")), "r.yaml:14:3: field 'hang': give engine, router or both");
  EXPECT_EQ(LoadError(WithHang("hang:\n  after: 5\n  engine: {metrics: /m, busy: [9a], progress: [b]}\n")),
            "r.yaml:15:32: field 'hang.engine.busy[0]': '9a' is not a Prometheus metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)");
  EXPECT_EQ(LoadError(WithHang("hang:\n  after: 5\n  engine: {metrics: /m, busy: [a]}\n")),
            "r.yaml:15:11: field 'hang.engine.progress': missing (required)");
  EXPECT_EQ(LoadError(WithHang("hang:\n  after: 5\n  engine: {metrics: m, busy: [a], progress: [b]}\n")),
            "r.yaml:15:21: field 'hang.engine.metrics': a path on the API origin starts with '/' (e.g. /metrics)");
  EXPECT_EQ(LoadError(WithHang("hang:\n  after: 5\n  engine: {busy: [a], progress: [b]}\n")),
            "r.yaml:15:11: field 'hang.engine': give exactly one of metrics (a path on the engine's API origin) and "
            "metrics_url (a full URL)");
  EXPECT_EQ(LoadError(WithHang("hang:\n  after: 5\n  router: {metrics_url: 'http://x:${NOPE}/m', busy: [a]}\n")),
            "r.yaml:15:11: field 'hang.router': give the router progress counters of its own, or an engine "
            "entry whose progress it waits on");
  EXPECT_EQ(LoadError(WithHang("hang:\n  after: 5\n  engine: {metrics: /m, busy: [a], progress: [b], per_label: a-b}\n")),
            "r.yaml:15:62: field 'hang.engine.per_label': 'a-b' is not a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*)");
  // A URL template naming what the arm lacks fails like any other template.
  const std::string e = LoadError(WithHang(std::string(kEngineOnly) +
                                           "  router: {metrics_url: 'http://localhost:${NOPE}/m', busy: [a]}\n"));
  EXPECT_NE(e.find("hang.router.metrics_url"), std::string::npos) << e;
  EXPECT_NE(e.find("NOPE"), std::string::npos) << e;
}

TEST(RecipeHang, PlanChecksPerProcessAndTheOption) {
  Result<Recipe> r = LoadRecipeString(
      WithHang(std::string(kEngineOnly) + "  router: {metrics_url: 'http://localhost:${METRICS_PORT}/metrics', busy: [inflight]}\n"),
      "r.yaml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  RenderRequest req;
  req.arm = "tp2";
  req.conc = 4;
  req.ports = {{"PORT", 9000}, {"ENGINE_PORT", 9001}, {"METRICS_PORT", 9002}};
  Result<LaunchPlan> p = RenderPlan(r.value(), req);
  ASSERT_TRUE(p.ok()) << p.error().message;
  ASSERT_TRUE(p.value().hang);
  EXPECT_EQ(p.value().hang->after_s, 60);
  ASSERT_EQ(p.value().hang->checks.size(), 2u);
  const HangCheck& e = p.value().hang->checks[0];
  EXPECT_EQ(e.process, "engine");
  EXPECT_EQ(e.metrics_url, "http://localhost:9001/metrics");
  EXPECT_EQ(e.busy, std::vector<std::string>{"running"});
  EXPECT_EQ(e.progress, std::vector<std::string>{"tokens_total"});
  const HangCheck& rt = p.value().hang->checks[1];
  EXPECT_EQ(rt.process, "router");
  EXPECT_EQ(rt.metrics_url, "http://localhost:9002/metrics");
  EXPECT_TRUE(rt.progress.empty());

  Result<LaunchPlan> back = PlanFromJson(PlanToJson(p.value(), false), "plan.json");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(PlanToJson(back.value(), true), PlanToJson(p.value(), true));
  EXPECT_NE(PlanSummary(p.value()).find("hang: after 60 s"), std::string::npos);

  req.hang_after_s = 7.5;
  EXPECT_EQ(RenderPlan(r.value(), req).value().hang->after_s, 7.5);
  req.hang_after_s = 0;
  Result<LaunchPlan> off = RenderPlan(r.value(), req);
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off.value().hang);
  EXPECT_EQ(PlanToJson(off.value(), false).find("\"hang\""), std::string::npos);
  req.hang_after_s = 86401;
  EXPECT_EQ(RenderPlan(r.value(), req).error().message, "mini arm tp2: hang_after 86401 is outside 1..86400 seconds (0: off)");

  Result<Recipe> plain = LoadRecipeString(WithHang(""), "r.yaml");
  req.hang_after_s = 30;
  EXPECT_EQ(RenderPlan(plain.value(), req).error().message,
            "mini arm tp2: a hang_after of 30 s was given but recipe mini has no 'hang:' section saying what "
            "progress is (docs/RECIPES.md); leave it out or turn it off");
  req.hang_after_s.reset();
  EXPECT_FALSE(RenderPlan(plain.value(), req).value().hang);
}

TEST(RecipeHang, PlanJsonIsCheckedOnRead) {
  Result<Recipe> r = LoadRecipeByName(kRecipeDir, "dsv41flash-fp4-b300-vllm");
  ASSERT_TRUE(r.ok()) << r.error().message;
  RenderRequest req;
  req.arm = "tp4";
  req.conc = 8;
  std::string json = PlanToJson(RenderDryRun(r.value(), req).value(), false);
  const std::string good = "\"process\":\"engine\"";
  ASSERT_NE(json.find(good), std::string::npos) << json;
  json.replace(json.find(good), good.size(), "\"process\":\"nobody\"");
  EXPECT_EQ(PlanFromJson(json, "p.json").error().message,
            "p.json: field 'hang.checks[0].process' names nobody, which is not a process of the plan");
}

// The shipped recipe: every engine process of each layout is watched per DP
// rank label; the router where the arm has one; a node after the head
// serves no API, so it has the policy and nothing to watch.
TEST(RecipeHang, TheShippedRecipesLayouts) {
  Result<Recipe> r = LoadRecipeByName(kRecipeDir, "dsv41flash-fp4-b300-vllm");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_TRUE(r.value().hang);
  EXPECT_EQ(r.value().hang->after_s, 300);
  const auto processes = [&](const std::string& arm, int64_t node) {
    RenderRequest req;
    req.arm = arm;
    req.conc = 64;
    req.node_rank = node;
    Result<LaunchPlan> p = RenderDryRun(r.value(), req);
    EXPECT_TRUE(p.ok()) << p.error().message;
    std::vector<std::string> out;
    for (const HangCheck& c : p.value().hang->checks) {
      out.push_back(c.process);
      EXPECT_EQ(c.per_label, c.process == "router" ? "" : "engine");
    }
    return out;
  };
  EXPECT_EQ(processes("tp4", 0), std::vector<std::string>{"engine"});
  EXPECT_EQ(processes("dep4", 0), (std::vector<std::string>{"engine", "router"}));
  EXPECT_EQ(processes("dep4-rankproc", 0),
            (std::vector<std::string>{"engine-rank0", "engine-rank1", "engine-rank2", "engine-rank3", "router"}));
  EXPECT_EQ(processes("dep16", 0), (std::vector<std::string>{"engine", "router"}));
  EXPECT_EQ(processes("dep16", 1), std::vector<std::string>{});
}

}  // namespace
}  // namespace ix
