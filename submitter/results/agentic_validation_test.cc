#include "submitter/results/agentic_validation.h"

#include <gtest/gtest.h>

#include "submitter/results/agentic_test_support.h"

namespace ix {
namespace {

// Each message is what validate_agentic_result.py printed (without "ERROR: ")
// for the same profile_export_aiperf.json and --failed-request-threshold 0.10.
TEST(ValidateAgenticResult, GivesPythonsMessages) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"request_count":{"avg":2},"error_request_count":{"avg":65}})",
       "aiperf request error rate exceeded the benchmark limit: 65/67 = 97.015% > 10.000%"},
      {R"({"request_count":{"avg":0}})", "aiperf completed zero requests"},
      {R"({"request_count":{"avg":true}})", "failed to read @: request_count.avg must be numeric"},
      {R"({"request_count":5})", "failed to read @: request_count must be an object"},
      {R"({"request_count":{"avg":-1}})", "failed to read @: request_count.avg must be a finite non-negative number"},
      {R"({"error_request_count":{"avg":1}})", "request_count.avg is missing"},
      {"[1]", "@ must contain a JSON object"},
  };
  for (const auto& [json, message] : cases) {
    test::TempDir dir("agentic-validate");
    const std::string path = dir.path() + "/profile_export_aiperf.json";
    ASSERT_TRUE(WriteFileAtomic(path, json));
    const AgenticValidation v = ValidateAgenticResult(dir.path(), 0.10);
    std::string want = message;
    if (const size_t at = want.find('@'); at != std::string::npos) want.replace(at, 1, path);
    EXPECT_EQ(v.errors, std::vector<std::string>{want}) << json;
  }
}

TEST(ValidateAgenticResult, PassesAtOrBelowTheThreshold) {
  test::TempDir dir("agentic-validate");
  std::filesystem::create_directories(dir.path() + "/run-1");
  ASSERT_TRUE(WriteFileAtomic(dir.path() + "/run-1/profile_export_aiperf.json",
                              R"({"request_count":{"avg":1234567},"error_request_count":{"avg":0.5}})"));
  const AgenticValidation v = ValidateAgenticResult(dir.path(), 0.10);
  EXPECT_TRUE(v.valid());
  EXPECT_EQ(v.message, "Validated aiperf request error rate: 0.5/1.23457e+06 = 0.000% <= 10.000%");
  EXPECT_TRUE(ValidateAgenticResult(dir.path(), 0.0).valid() == false);
  EXPECT_EQ(ValidateAgenticResult(dir.path() + "/none", 0.1).errors,
            std::vector<std::string>{dir.path() + "/none/profile_export_aiperf.json not found"});
}

TEST(ValidateAgenticResult, TakesTheThresholdAsArgparseDoes) {
  EXPECT_EQ(ParseFailedRequestThreshold("0.10").value(), 0.1);
  EXPECT_EQ(ParseFailedRequestThreshold("1.5").error().message, "--failed-request-threshold must be between 0 and 1");
  EXPECT_FALSE(ParseFailedRequestThreshold("ten"));
}

TEST(ValidateRequiredServerMetrics, NeedsBothExportsAndThePrefix) {
  test::TempDir dir("agentic-required");
  EXPECT_EQ(ValidateRequiredServerMetrics(dir.path(), ""), "");
  EXPECT_EQ(ValidateRequiredServerMetrics(dir.path(), "vllm:"),
            "required AIPerf server metrics artifacts are missing or empty in " + dir.path() + "/aiperf_artifacts");
  test::CopyAgenticCase("vllm_dep", dir.path());
  EXPECT_EQ(ValidateRequiredServerMetrics(dir.path(), "vllm:"), "");
  EXPECT_EQ(ValidateRequiredServerMetrics(dir.path(), "sglang:"),
            dir.path() + "/aiperf_artifacts/server_metrics_export.json contains no metric with required prefix 'sglang:'");
}

}  // namespace
}  // namespace ix
