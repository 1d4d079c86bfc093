// What the recipe and launch plan tests share: the seed recipe loaded once
// per test (a fixture base), a load that must fail, as its message, and a
// table of such loads.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <utility>

#include "core/recipe/recipe.h"
#include "tests/support/test.h"

namespace ix::test {

inline constexpr char kRecipeDir[] = IX_SOURCE_DIR "/recipes";
inline constexpr char kSeedRecipe[] = "dsv41flash-fp4-b300-vllm";

// A fixture whose recipe_ is the seed recipe (recipes/dsv41flash-fp4-b300-vllm),
// loaded fresh for each test.
class SeedRecipeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<Recipe> r = LoadRecipeByName(kRecipeDir, kSeedRecipe);
    ASSERT_TRUE(r.ok()) << r.error().message;
    recipe_ = std::move(r).value();
  }

  Recipe recipe_;
};

// The error of loading recipe `text` (as r.yaml), which must fail ("" and
// a failed test when it loads).
inline std::string LoadError(const std::string& text) {
  Result<Recipe> r = LoadRecipeString(text, "r.yaml");
  EXPECT_FALSE(r.ok());
  return r.ok() ? "" : r.error().message;
}

// Loads recipe `base` with each change in turn: each must fail with its
// error.
inline void ExpectLoadErrors(const std::string& base, std::initializer_list<TextChange> changes) {
  ExpectChangeErrors(base, changes, LoadError);
}

}  // namespace ix::test
