#include "spank_plugin/step_options.h"

#include <sys/stat.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <initializer_list>

#include "tests/support/test.h"

namespace ix {
namespace {

const char kDir[] = IX_SOURCE_DIR "/recipes";
const char kRecipe[] = "dsv41flash-fp4-b300-vllm";

std::string ErrorOf(const StepOptions& o) {
  Status s = ValidateStepOptions(o, kDir);
  return s.ok() ? "" : s.error().message;
}

// Complete options for the test recipe.
StepOptions Asking(const std::string& arm, int64_t conc) { return {.arm = arm, .recipe = kRecipe, .conc = conc}; }

TEST(StepOptions, InactiveWithoutOptions) {
  EXPECT_FALSE(StepOptions{}.Active());
  EXPECT_TRUE(ValidateStepOptions(StepOptions{}, "/nonexistent").ok());
}

TEST(StepOptions, UnknownArmListsTheAllowedOnes) {
  StepOptions o;
  o.arm = "nope";
  EXPECT_EQ(ErrorOf(o), "--inferencex-arm=nope: unknown arm; allowed: dep16, dep4, dep4-rankproc, tep4, tp4, tp8pp2");
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
  StepOptions o = Asking("dep4", 64);
  EXPECT_EQ(ErrorOf(o), "");
  o.conc = 3;
  EXPECT_NE(ErrorOf(o).find("divisible by 4"), std::string::npos);
}

TEST(StepOptions, LoadCheckedRecipeReturnsTheRecipeItChecked) {
  StepOptions o = Asking("dep4", 64);
  Result<Recipe> r = LoadCheckedRecipe(o, kDir);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().name, kRecipe);
  EXPECT_NE(r.value().FindArm("dep4"), nullptr);
  o.conc = 3;  // the same refusal as ValidateStepOptions, not a recipe
  r = LoadCheckedRecipe(o, kDir);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, ErrorOf(o));
}

// A recipe that is there but cannot be read is said as such, naming the
// file or the directory, never opened when it is a FIFO.
TEST(StepOptions, AnUnreadableRecipeIsNamed) {
  namespace fs = std::filesystem;
  test::TempDir d("ix-step-options-test");
  const std::string dir = d.path() + "/recipes";
  const std::string file = dir + "/" + kRecipe + ".yaml";
  fs::create_directory(dir);
  fs::copy_file(std::string(kDir) + "/" + kRecipe + ".yaml", file);
  StepOptions o = Asking("tp4", 8);
  ASSERT_TRUE(ValidateStepOptions(o, dir).ok());
  auto error = [&] {
    Status s = ValidateStepOptions(o, dir);
    return s.ok() ? std::string("accepted") : s.error().message;
  };
  const std::string prefix = std::string("--inferencex-recipe=") + kRecipe + ": ";
  fs::rename(file, file + ".away");
  ASSERT_EQ(::mkfifo(file.c_str(), 0644), 0);
  EXPECT_EQ(error(), prefix + file + ": a FIFO, not a regular file");
  fs::remove(file);
  fs::create_directory(file);
  EXPECT_EQ(error(), prefix + file + ": a directory, not a regular file");
  fs::remove(file);
  fs::create_symlink("/dev/zero", file);
  EXPECT_EQ(error(), prefix + file + ": a character device, not a regular file");
  fs::remove(file);
  fs::create_symlink(file + ".away", file);  // a linked recipe is read
  EXPECT_EQ(error(), "accepted");
  fs::remove(file);
  fs::rename(file + ".away", file);
  fs::rename(dir, dir + ".away");
  EXPECT_EQ(error(), prefix + "recipe_dir " + dir + " cannot be read: No such file or directory "
                              "(plugstack.conf: recipe_dir=DIR)");
  std::ofstream(dir) << "a file\n";
  EXPECT_EQ(error(), prefix + "recipe_dir " + dir + " cannot be read: Not a directory "
                              "(plugstack.conf: recipe_dir=DIR)");
  fs::remove(dir);
  fs::rename(dir + ".away", dir);
  o.recipe = "nope";  // a missing recipe is still the loader's "unknown", with the list
  EXPECT_NE(error().find("unknown recipe 'nope' in " + dir + "; available: " + kRecipe), std::string::npos) << error();
}

// A KV offload tier of the recipe renders with its budget; another tier,
// a tier without the budget its templates need, or a budget without a tier
// is refused in srun, saying what is allowed.
TEST(StepOptions, KvOffloadTiersOfTheRecipe) {
  StepOptions o = Asking("dep4", 64);
  o.kv_offload = "vllm-simple";
  o.kv_offload_dram_gb = 1424;
  EXPECT_TRUE(o.Active());
  EXPECT_EQ(ErrorOf(o), "");
  o.kv_offload = "none";
  o.kv_offload_dram_gb.reset();
  EXPECT_EQ(ErrorOf(o), "");
  o.kv_offload = "lmcache";
  EXPECT_EQ(ErrorOf(o), "--inferencex-kv-offload=lmcache: recipe dsv41flash-fp4-b300-vllm serves no such KV offload tier; "
                        "allowed: none, vllm-simple, mooncake");
  o.kv_offload = "mooncake";
  EXPECT_NE(ErrorOf(o), "") << "mooncake's segment needs the budget";
  o.kv_offload = "none";
  o.kv_offload_dram_gb = 100;
  EXPECT_EQ(ErrorOf(o), "--inferencex-kv-offload-dram-gb is the budget of a KV offload tier: give "
                        "--inferencex-kv-offload=TIER");
  StepOptions only;
  only.kv_offload = "vllm-simple";
  EXPECT_TRUE(only.Active()) << "an option given makes the step the plugin's";
}

TEST(StepOptions, ParseKvOffloadDramGb) {
  EXPECT_EQ(ParseKvOffloadDramGb("1424").value(), 1424);
  for (const char* bad : {"0", "-1", "1.5", "", "1000001", "12GB"}) {
    Result<int64_t> r = ParseKvOffloadDramGb(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().message, std::string("--inferencex-kv-offload-dram-gb=") + bad +
                                     ": expected a number of GB from 1 to 1000000");
  }
}

TEST(StepOptions, ParseConcurrency) {
  EXPECT_EQ(ParseConcurrency("64").value(), 64);
  EXPECT_FALSE(ParseConcurrency("0").ok());
  EXPECT_FALSE(ParseConcurrency("-1").ok());
  EXPECT_FALSE(ParseConcurrency("8x").ok());
  EXPECT_FALSE(ParseConcurrency("").ok());
  EXPECT_EQ(ParseConcurrency("1000000").value(), 1000000);
  EXPECT_EQ(ParseConcurrency("1000001").error().message,
            "--inferencex-conc=1000001: expected a whole number from 1 to 1000000");
  EXPECT_FALSE(ParseConcurrency("4611686018427387904").ok());  // conc x multiplier would overflow
  EXPECT_FALSE(ParseConcurrency("+8").ok());
  EXPECT_FALSE(ParseConcurrency(" 8").ok());
}

// Each of `bad` is refused by `parse` with "--OPTION=BAD: ALLOWED".
void ExpectRefused(Result<int64_t> (*parse)(const std::string&), const std::string& option,
                   std::initializer_list<const char*> bad, const std::string& allowed) {
  for (const char* text : bad) {
    Result<int64_t> r = parse(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.error().message, "--" + option + "=" + std::string(text) + ": " + allowed);
  }
}

TEST(StepOptions, ParseReadyTimeout) {
  EXPECT_EQ(ParseReadyTimeout("3600").value(), 3600);
  EXPECT_EQ(ParseReadyTimeout("604800").value(), 604800);
  // 2^32 once became 0 through an int cast; 2^31-1 overflowed "+ 60".
  ExpectRefused(ParseReadyTimeout, "inferencex-ready-timeout",
                {"4294967296", "2147483647", "604801", "0", "-5", "1.5", ""},
                "expected a number of seconds from 1 to 604800");
}

TEST(StepOptions, ParseHangAfter) {
  EXPECT_EQ(ParseHangAfter("300").value(), 300);
  EXPECT_EQ(ParseHangAfter("86400").value(), 86400);
  EXPECT_EQ(ParseHangAfter("off").value(), 0);
  ExpectRefused(ParseHangAfter, "inferencex-hang-after", {"0", "86401", "-1", "1.5", "", "OFF", "5s"},
                "expected a number of seconds from 1 to 86400, or off");
}

TEST(StepOptions, HangAfterReachesTheRenderCheck) {
  StepOptions o = Asking("dep4", 64);
  o.hang_after_s = 0;
  EXPECT_TRUE(o.Active());
  EXPECT_EQ(ErrorOf(o), "");
  o.hang_after_s = 120;
  EXPECT_EQ(ErrorOf(o), "");
  StepOptions only;
  only.hang_after_s = 120;
  EXPECT_TRUE(only.Active()) << "an option given makes the step the plugin's";
}

}  // namespace
}  // namespace ix
