#include "submitter/sweep/multinode_arm.h"

#include <gtest/gtest.h>

#include "submitter/sweep/sweep_plan.h"

namespace ix {
namespace {

const std::string kRecipe = IX_SOURCE_DIR "/tests/data/sweep-multinode/recipes/mn-b300.yaml";

// An aggregated row as InferenceX writes one: the worker under prefill,
// decode repeating its shape with num-worker 0.
SearchSpaceEntry Aggregated(int64_t tp, int64_t ep, bool dp_attn, int64_t pp = 1) {
  SearchSpaceEntry ss;
  ss.tp = 0;  // multinode rows have no top-level tp
  ss.prefill.num_worker = 1;
  ss.prefill.tp = tp;
  ss.prefill.ep = ep;
  ss.prefill.dp_attn = dp_attn;
  ss.prefill.pp = pp;
  ss.decode = ss.prefill;
  ss.decode.num_worker = 0;
  return ss;
}

ConfigEntry Config(bool disagg) {
  ConfigEntry c;
  c.key = "k";
  c.multinode = true;
  c.disagg = disagg;
  return c;
}

bool Contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(MultinodeArm, NamesFollowInferenceXsRows) {
  EXPECT_EQ(ArmFor(Aggregated(16, 16, true)), "dep16");
  EXPECT_EQ(ArmFor(Aggregated(4, 16, true)), "dep16");  // Kimi-K3's GB200 dep16 row: TP 4 x DP 4
  EXPECT_EQ(ArmFor(Aggregated(8, 1, false, 2)), "tp8pp2");
  EXPECT_EQ(ArmFor(Aggregated(16, 1, false)), "tp16");
  EXPECT_EQ(ArmFor(Aggregated(16, 16, false)), "tep16");
}

TEST(MultinodeArm, ShapesInTheRecipesTerms) {
  ConfigEntry agg = Config(false);
  Result<MultinodeShape> dep = AggregatedShape(agg, Aggregated(16, 16, true));
  ASSERT_TRUE(dep) << dep.error().message;
  EXPECT_EQ(dep.value().arm, "dep16");
  EXPECT_EQ(dep.value().tp, 1);
  EXPECT_EQ(dep.value().dp, 16);
  EXPECT_EQ(dep.value().ep, 16);
  EXPECT_EQ(dep.value().gpus, 16);
  Result<MultinodeShape> tpdp = AggregatedShape(agg, Aggregated(4, 16, true));
  ASSERT_TRUE(tpdp) << tpdp.error().message;
  EXPECT_EQ(tpdp.value().tp, 4);
  EXPECT_EQ(tpdp.value().dp, 4);
  Result<MultinodeShape> pp = AggregatedShape(agg, Aggregated(8, 1, false, 2));
  ASSERT_TRUE(pp) << pp.error().message;
  EXPECT_EQ(pp.value().Describe(), "TP 8 x PP 2 x DP 1, EP 1 (16 GPUs)");
}

TEST(MultinodeArm, RowsOneArmCannotRunSayWhy) {
  Result<MultinodeShape> disagg = AggregatedShape(Config(true), Aggregated(8, 8, true));
  ASSERT_FALSE(disagg);
  EXPECT_TRUE(Contains(disagg.error().message, "disaggregated (disagg: true")) << disagg.error().message;
  SearchSpaceEntry two = Aggregated(16, 1, false);
  two.prefill.num_worker = 2;
  Result<MultinodeShape> r = AggregatedShape(Config(false), two);
  ASSERT_FALSE(r);
  EXPECT_TRUE(Contains(r.error().message, "prefill.num-worker is 2")) << r.error().message;
  SearchSpaceEntry decode = Aggregated(16, 1, false);
  decode.decode.num_worker = 1;
  r = AggregatedShape(Config(false), decode);
  ASSERT_FALSE(r);
  EXPECT_TRUE(Contains(r.error().message, "decode.num-worker is 1")) << r.error().message;
  SearchSpaceEntry dcp = Aggregated(8, 1, false, 2);
  dcp.prefill.dcp_size = 8;
  r = AggregatedShape(Config(false), dcp);
  ASSERT_FALSE(r);
  EXPECT_TRUE(Contains(r.error().message, "dcp-size 8")) << r.error().message;
}

TEST(MultinodeArm, TheArmMustSpanNodesWithTheSameShape) {
  Result<Recipe> recipe = LoadRecipeFile(kRecipe);
  ASSERT_TRUE(recipe) << recipe.error().message;
  const ConfigEntry agg = Config(false);
  EXPECT_TRUE(CheckMultinodeArm(AggregatedShape(agg, Aggregated(16, 16, true)).value(), recipe.value()).ok());
  EXPECT_TRUE(CheckMultinodeArm(AggregatedShape(agg, Aggregated(8, 1, false, 2)).value(), recipe.value()).ok());
  // dep16 as TP 4 x DP 4 is another engine than the recipe's TP 1 x DP 16.
  Status s = CheckMultinodeArm(AggregatedShape(agg, Aggregated(4, 16, true)).value(), recipe.value());
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Contains(s.error().message, "arm dep16 of recipe mn-b300 is TP 1 x PP 1 x DP 16, EP 16; the entry needs "
                                          "TP 4 x PP 1 x DP 4, EP 16 (16 GPUs)"))
      << s.error().message;
  s = CheckMultinodeArm(AggregatedShape(agg, Aggregated(16, 16, false)).value(), recipe.value());
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Contains(s.error().message, "recipe mn-b300 has no arm tep16")) << s.error().message;
  // tp8 exists, on one node.
  s = CheckMultinodeArm(AggregatedShape(agg, Aggregated(8, 1, false)).value(), recipe.value());
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Contains(s.error().message, "arm tp8 of recipe mn-b300 runs on one node")) << s.error().message;
}

}  // namespace
}  // namespace ix
