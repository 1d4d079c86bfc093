#include "submitter/results/power_aggregate.h"

#include <gtest/gtest.h>

#include <ctime>

#include "submitter/results/python_json.h"

namespace ix {
namespace {

// Two GPUs sampled every second from t=10 to t=13: GPU 0 steady at 100 W,
// GPU 1 ramping 200, 220, 240, 260 W.
const char kCsv[] =
    "timestamp, index, power.draw [W], power.limit [W]\n"
    "10, 0, 100.00 W, 700 W\n10, 1, 200.00 W, 700 W\n"
    "11, 0, 100.00 W, 700 W\n11, 1, 220.00 W, 700 W\n"
    "12, 0, 100.00 W, 700 W\n12, 1, 240.00 W, 700 W\n"
    "13, 0, 100.00 W, 700 W\n13, 1, 260.00 W, 700 W\n";

TEST(IntegratePower, IntegratesEachGpuOverTheWindowWithInterpolatedEnds) {
  const PowerIntegration p = IntegratePower(kCsv, 10.5, 12.5, 2);
  ASSERT_TRUE(p.valid()) << p.reasons[0];
  // GPU 0: 100 W x 2 s; GPU 1: 210 -> 250 W linearly, mean 230 W x 2 s.
  EXPECT_DOUBLE_EQ(*p.total_gpu_energy_j, 200.0 + 460.0);
  EXPECT_DOUBLE_EQ(*p.avg_total_gpu_power_w, 330.0);
  EXPECT_DOUBLE_EQ(*p.avg_power_w, 165.0);
  EXPECT_EQ(p.gpu_ids, (std::vector<std::string>{"0", "1"}));
}

TEST(IntegratePower, GivesInferenceXsReasonsForAnInvalidMeasurement) {
  EXPECT_EQ(IntegratePower(kCsv, 9.0, 12.0, 2).reasons, std::vector<std::string>{"benchmark_window_not_bracketed"});
  EXPECT_EQ(IntegratePower(kCsv, 10.5, 12.5, 4).reasons, std::vector<std::string>{"expected_gpu_count_mismatch"});
  const std::string gappy = "timestamp, index, power.draw [W]\n0, 0, 1 W\n5, 0, 1 W\n";
  EXPECT_EQ(IntegratePower(gappy, 1, 4, 1).reasons, std::vector<std::string>{"sampling_gap_exceeded"});
  EXPECT_EQ(IntegratePower("time,watts\n1,2\n", 1, 2, 1).reasons,
            (std::vector<std::string>{"power_column_missing", "gpu_identity_column_missing"}));
  EXPECT_EQ(IntegratePower("", 1, 2, 1).reasons, std::vector<std::string>{"telemetry_file_empty"});
  EXPECT_EQ(IntegratePower(kCsv, 12, 11, 2).reasons, std::vector<std::string>{"invalid_benchmark_window"});
}

TEST(ParsePowerTimestamp, ReadsNvidiaSmiLocalTimeAndEpochNumbers) {
  std::tm tm{};
  tm.tm_year = 2026 - 1900, tm.tm_mon = 11, tm.tm_mday = 5, tm.tm_hour = 15, tm.tm_min = 15, tm.tm_sec = 41;
  tm.tm_isdst = -1;
  const double base = static_cast<double>(std::mktime(&tm));
  EXPECT_EQ(ParsePowerTimestamp("2026/12/05 15:15:41.419"), base + 419000 / 1e6);
  EXPECT_EQ(ParsePowerTimestamp(" 2026/12/05 15:15:41 "), base);
  EXPECT_EQ(ParsePowerTimestamp("1796483741.5"), 1796483741.5);
  EXPECT_EQ(ParsePowerTimestamp("1796483741500"), 1796483741.5);
  EXPECT_FALSE(ParsePowerTimestamp("yesterday"));
}

TEST(AggregatePower, PatchesTheAggResultAsAggregatePowerDoes) {
  rapidjson::Document bench;
  bench.Parse(R"({"benchmark_start_time_unix":10.5,"benchmark_end_time_unix":12.5,"duration":2.0,)"
              R"("completed":10,"total_input_tokens":1000,"total_output_tokens":100})");
  rapidjson::Document agg;
  agg.Parse(R"({"hw":"b300","avg_power_w":1,"tp":4})");
  EXPECT_TRUE(AggregatePower(std::string(kCsv), bench, agg, 2).empty());
  EXPECT_EQ(PyJsonDumps(agg, 0),
            R"({"hw": "b300", "tp": 4, "power_metric_schema_version": 2, "power_valid": 1, "avg_power_w": 165.0, )"
            R"("avg_total_gpu_power_w": 330.0, "total_gpu_energy_j": 660.0, "joules_per_successful_query": 66.0, )"
            R"("joules_per_input_token": 0.66, "joules_per_output_token": 6.6, "joules_per_total_token": 0.6})");
}

TEST(AggregatePower, MarksPowerInvalidWithoutTelemetryOrWithBadCounts) {
  rapidjson::Document bench;
  bench.Parse(R"({"benchmark_start_time_unix":10.5,"benchmark_end_time_unix":12.5,"duration":2.0,)"
              R"("completed":0,"total_input_tokens":1000,"total_output_tokens":100})");
  rapidjson::Document agg;
  agg.Parse("{}");
  EXPECT_EQ(AggregatePower(std::nullopt, bench, agg, 2),
            (std::vector<std::string>{"invalid_successful_query_count", "telemetry_file_missing"}));
  EXPECT_EQ(PyJsonDumps(agg, 0), R"({"power_metric_schema_version": 2, "power_valid": 0})");
}

// aggregate_power_multinode.py's _patch_agg for a run without LOGS/power:
// every power metric (whole and per role) and power_invalid_reasons go,
// power_valid is set where it was (a dict assignment) and the schema
// version appended; the rest keeps its order. (The first expected text is
// what the real _patch_agg, InferenceX 843c6254, makes of the same input.)
TEST(MarkMultinodePowerMissing, PatchesTheAggAsAggregatePowerMultinodePyDoes) {
  rapidjson::Document agg;
  agg.Parse(R"({"hw": "b300", "avg_power_w": 1.0, "power_valid": 1, "prefill_gpu_energy_j": 2.0,)"
            R"( "decode_joules_per_output_token": 3.0, "power_invalid_reasons": ["x"], "p99_e2el": 5.0})");
  EXPECT_EQ(MarkMultinodePowerMissing(agg), std::vector<std::string>{"power_artifacts_missing"});
  EXPECT_EQ(PyJsonDumps(agg, 0),
            R"({"hw": "b300", "power_valid": 0, "p99_e2el": 5.0, "power_metric_schema_version": 2})");
  agg.Parse(R"({"hw": "b300"})");
  (void)MarkMultinodePowerMissing(agg);
  EXPECT_EQ(PyJsonDumps(agg, 0), R"({"hw": "b300", "power_metric_schema_version": 2, "power_valid": 0})");
}

}  // namespace
}  // namespace ix
