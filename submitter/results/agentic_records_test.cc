#include "submitter/results/agentic_records.h"

#include <gtest/gtest.h>

#include "submitter/results/agentic_test_support.h"
#include "submitter/results/python_json.h"

namespace ix {
namespace {

TEST(AgenticRecords, CountsWarmupAndErrorsAsInferenceXDoes) {
  const std::string dir = test::AgenticCaseDir("warmup_errors");
  Result<AgenticRecords> r = LoadAgenticRecords(ResolveAgenticArtifactDir(dir) + "/profile_export.jsonl");
  ASSERT_TRUE(r) << r.error().message;
  rapidjson::Document d;
  // What load_records_with_accounting returned for this file (json.dumps).
  EXPECT_EQ(PyJsonDumps(RequestAccounting(r.value(), d.GetAllocator()), 0),
            R"({"records_total": 21, "records_profiled": 15, "records_dropped_total": 6, "records_warmup_dropped": 2,)"
            R"( "records_error_dropped": 5, "error_categories": {"TimeoutError": 1, "HTTPStatusError": 1,)"
            R"( "Connection reset": 1, "aiohttp.ClientError": 1, "429": 1}})");
  EXPECT_EQ(r.value().kept_count(), 15);
}

TEST(AgenticRecords, FindsTheArtifactsOneLevelDown) {
  test::TempDir dir("agentic-records");
  std::filesystem::create_directories(dir.path() + "/aiperf_artifacts/run-b");
  std::filesystem::create_directories(dir.path() + "/aiperf_artifacts/run-a");
  ASSERT_TRUE(WriteFileAtomic(dir.path() + "/aiperf_artifacts/run-b/profile_export.jsonl", "{}\n"));
  EXPECT_EQ(ResolveAgenticArtifactDir(dir.path()), dir.path() + "/aiperf_artifacts/run-b");
  ASSERT_TRUE(WriteFileAtomic(dir.path() + "/aiperf_artifacts/run-a/profile_export.jsonl", "{}\n"));
  EXPECT_EQ(ResolveAgenticArtifactDir(dir.path()), dir.path() + "/aiperf_artifacts/run-a");
  ASSERT_TRUE(WriteFileAtomic(dir.path() + "/aiperf_artifacts/profile_export.jsonl", "\n{}\n\n"));
  EXPECT_EQ(ResolveAgenticArtifactDir(dir.path()), dir.path() + "/aiperf_artifacts");
  Result<AgenticRecords> r = LoadAgenticRecords(dir.path() + "/aiperf_artifacts/profile_export.jsonl");
  ASSERT_TRUE(r);
  EXPECT_EQ(r.value().total, 1);
  ASSERT_TRUE(WriteFileAtomic(dir.path() + "/bad.jsonl", "{}\n{oops\n"));
  EXPECT_FALSE(LoadAgenticRecords(dir.path() + "/bad.jsonl"));
}

TEST(AgenticRecords, ConvertsValuesAsPythonsIntAndFloat) {
  rapidjson::Document d;
  d.Parse(R"([12.7, "12", "12.5", true, null, " 3.5 ", "x", -0.5])");
  EXPECT_EQ(PyToInt(&d[0]), 12);
  EXPECT_EQ(PyToInt(&d[1]), 12);
  EXPECT_EQ(PyToInt(&d[2]), std::nullopt);
  EXPECT_EQ(PyToInt(&d[3]), 1);
  EXPECT_EQ(PyToInt(&d[4]), std::nullopt);
  EXPECT_EQ(PyToInt(&d[7]), 0);
  EXPECT_EQ(PyToFloat(&d[2]), 12.5);
  EXPECT_EQ(PyToFloat(&d[5]), 3.5);
  EXPECT_EQ(PyToFloat(&d[6]), std::nullopt);
}

}  // namespace
}  // namespace ix
