#include "submitter/results/agentic_power.h"

#include <gtest/gtest.h>

#include "submitter/results/agentic_test_support.h"
#include "submitter/results/python_json.h"

namespace ix {
namespace {

TEST(ParseIsoTimestamp, ReadsAiperfsNaiveTimesInTheCapturedOffset) {
  // 2026-08-20T10:00:00.123456 at -07:00 is 17:00:00.123456Z.
  EXPECT_EQ(ParseIsoTimestamp("2026-08-20T10:00:00.123456", -420), 1787245200.123456);
  EXPECT_EQ(ParseIsoTimestamp("2026-08-20T17:00:00Z", std::nullopt), 1787245200.0);
  EXPECT_EQ(ParseIsoTimestamp("2026-08-20 19:00:00+02:00", std::nullopt), 1787245200.0);
  EXPECT_EQ(ParseIsoTimestamp("2026-08-20T10:00:00", std::nullopt), std::nullopt);
  EXPECT_EQ(ParseIsoTimestamp("yesterday", 0), std::nullopt);
  EXPECT_TRUE(IsNaiveIsoTimestamp(" 2026-08-20T10:00:00 "));
  EXPECT_FALSE(IsNaiveIsoTimestamp("2026-08-20T10:00:00Z"));
}

TEST(AgenticPower, WritesTheWindowAndTheValidationAsInferenceX) {
  test::UseUtc();
  test::TempDir dir("agentic-power");
  test::CopyAgenticCase("power", dir.path());
  rapidjson::Document agg(rapidjson::kObjectType);
  EXPECT_EQ(ApplyAgenticPower(dir.path(), agg, 2), std::vector<std::string>{});
  int err = 0;
  EXPECT_EQ(ReadFileText(dir.path() + "/agentic_power_window.json", &err),
            test::AgenticExpected("power", "agentic_power_window.json", dir.path()));
  EXPECT_EQ(ReadFileText(dir.path() + "/power_validation.json", &err),
            test::AgenticExpected("power", "power_validation.json", dir.path()));
  // The power fields of expected/agentic_result.json (power_adapter.py's patch).
  EXPECT_EQ(PyJsonDumps(agg, 0),
            R"({"power_metric_schema_version": 2, "power_valid": 1, "avg_power_w": 509.95, "avg_total_gpu_power_w": 1019.901,)"
            R"( "total_gpu_energy_j": 6660.833, "joules_per_successful_query": 1110.138796,)"
            R"( "joules_per_input_token": 0.888111, "joules_per_output_token": 17.762221,)"
            R"( "joules_per_total_token": 0.84582})");
}

TEST(AgenticPower, SaysWhyThereIsNoWindow) {
  test::TempDir dir("agentic-power-fail");
  test::CopyAgenticCase("power", dir.path());
  std::filesystem::remove(dir.path() + "/agentic_power_timezone_offset.txt");
  EXPECT_EQ(BuildAgenticPowerWindow(dir.path()).reasons, std::vector<std::string>{"profile_timezone_offset_missing"});
  ASSERT_TRUE(WriteFileAtomic(dir.path() + "/agentic_power_timezone_offset.txt", "-2400\n"));
  EXPECT_EQ(BuildAgenticPowerWindow(dir.path()).reasons, std::vector<std::string>{"profile_timezone_offset_invalid"});
  EXPECT_EQ(BuildAgenticPowerWindow(dir.path() + "/nowhere").reasons, std::vector<std::string>{"profile_artifacts_missing"});
  // InferenceX's fixture has no start_time: the audit file says so.
  test::TempDir spec("agentic-power-spec");
  test::CopyAgenticCase("spec47", spec.path());
  rapidjson::Document agg(rapidjson::kObjectType);
  EXPECT_EQ(ApplyAgenticPower(spec.path(), agg, 4), std::vector<std::string>{"profile_window_missing"});
  int err = 0;
  EXPECT_EQ(ReadFileText(spec.path() + "/power_validation.json", &err),
            test::AgenticExpected("spec47", "power_validation.json", spec.path()));
  EXPECT_EQ(PyJsonDumps(agg, 0), R"({"power_metric_schema_version": 2, "power_valid": 0})");
}

}  // namespace
}  // namespace ix
