#include "spank_plugin/step_options.h"

#include <gtest/gtest.h>

namespace ix {
namespace {

const char kDir[] = IX_SOURCE_DIR "/recipes";
const char kRecipe[] = "dsv41flash-fp4-b300-vllm";

std::string ErrorOf(const StepOptions& o) {
  Status s = ValidateStepOptions(o, kDir);
  return s.ok() ? "" : s.error().message;
}

TEST(StepOptions, InactiveWithoutOptions) {
  EXPECT_FALSE(StepOptions{}.Active());
  EXPECT_TRUE(ValidateStepOptions(StepOptions{}, "/nonexistent").ok());
}

TEST(StepOptions, UnknownArmListsTheAllowedOnes) {
  StepOptions o;
  o.arm = "nope";
  EXPECT_EQ(ErrorOf(o), "--inferencex-arm=nope: unknown arm; allowed: dep4, dep4-rankproc, tep4, tp4");
  o.recipe = kRecipe;
  o.conc = 8;
  EXPECT_NE(ErrorOf(o).find("unknown arm for recipe dsv41flash-fp4-b300-vllm; allowed: tp4, tep4, dep4"),
            std::string::npos);
}

TEST(StepOptions, MissingPieces) {
  StepOptions o;
  o.arm = "tp4";
  EXPECT_NE(ErrorOf(o).find("--inferencex-recipe=NAME is required"), std::string::npos);
  o.recipe = kRecipe;
  EXPECT_NE(ErrorOf(o).find("--inferencex-conc=N is required"), std::string::npos);
  o.recipe = "nope";
  EXPECT_NE(ErrorOf(o).find("available: dsv41flash-fp4-b300-vllm"), std::string::npos);
}

TEST(StepOptions, ValidCombinationAndDep4Divisibility) {
  StepOptions o;
  o.arm = "dep4";
  o.recipe = kRecipe;
  o.conc = 64;
  EXPECT_EQ(ErrorOf(o), "");
  o.conc = 3;
  EXPECT_NE(ErrorOf(o).find("divisible by 4"), std::string::npos);
}

TEST(StepOptions, LoadCheckedRecipeReturnsTheRecipeItChecked) {
  StepOptions o;
  o.arm = "dep4";
  o.recipe = kRecipe;
  o.conc = 64;
  Result<Recipe> r = LoadCheckedRecipe(o, kDir);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().name, kRecipe);
  EXPECT_NE(r.value().FindArm("dep4"), nullptr);
  o.conc = 3;  // the same refusal as ValidateStepOptions, not a recipe
  r = LoadCheckedRecipe(o, kDir);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, ErrorOf(o));
}

TEST(StepOptions, ParseConcurrency) {
  EXPECT_EQ(ParseConcurrency("64").value(), 64);
  EXPECT_FALSE(ParseConcurrency("0").ok());
  EXPECT_FALSE(ParseConcurrency("-1").ok());
  EXPECT_FALSE(ParseConcurrency("8x").ok());
  EXPECT_FALSE(ParseConcurrency("").ok());
}

}  // namespace
}  // namespace ix
