// Unit tests of the fake aiperf's records and profile aggregate
// (aiperf_export.h).
#include "aiperf_export.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <regex>

namespace ixfake::aiperf {
namespace {

RequestRecord ok_record(bool warmup, int hit, int blocks) {
  return RequestRecord{.session_num = 2, .x_request_id = "req", .x_correlation_id = "corr",
                       .conversation_id = "synthetic-001::sa:explore_001", .turn_index = 1,
                       .start_ns = 1000, .ack_ns = 1500, .end_ns = 3000, .warmup = warmup,
                       .input_len = 64, .isl = 64, .osl = 5, .ttft_ms = 10, .latency_ms = 50,
                       .itl_ms = 10, .full_itl_ms = 10, .served_by_rank = 3,
                       .prefix_hit_blocks = hit, .prefix_blocks = blocks};
}

TEST(AiperfExport, RecordLine) {
  rapidjson::Document d;
  d.Parse(record_json(ok_record(false, 0, 0)).c_str());
  ASSERT_FALSE(d.HasParseError());
  const auto& md = d["metadata"];
  EXPECT_STREQ(md["benchmark_phase"].GetString(), "profiling");
  EXPECT_STREQ(md["conversation_id"].GetString(), "synthetic-001::sa:explore_001");
  EXPECT_EQ(md["turn_index"].GetInt(), 1);
  EXPECT_EQ(md["request_end_ns"].GetInt64(), 3000);
  EXPECT_EQ(md["served_by_rank"].GetInt(), 3);
  EXPECT_EQ(d["metrics"]["input_sequence_length"]["value"].GetInt(), 64);
  EXPECT_STREQ(d["metrics"]["time_to_first_token"]["unit"].GetString(), "ms");
  EXPECT_TRUE(d["error"].IsNull());

  RequestRecord bad = ok_record(true, 0, 0);
  bad.error = RequestError{500, "HTTPStatusError", "HTTP 500: boom"};
  d.Parse(record_json(bad).c_str());
  EXPECT_STREQ(d["metadata"]["benchmark_phase"].GetString(), "warmup");
  EXPECT_EQ(d["error"]["code"].GetInt(), 500);
  EXPECT_STREQ(d["error"]["type"].GetString(), "HTTPStatusError");
  EXPECT_EQ(d["metrics"]["error_isl"]["value"].GetInt(), 64);
  EXPECT_FALSE(d["metrics"].HasMember("request_latency"));
}

TEST(AiperfExport, AggregateCountsProfilingOnly) {
  std::vector<RequestRecord> records = {ok_record(true, 5, 5), ok_record(false, 3, 4), ok_record(false, 0, 4)};
  RequestRecord bad = ok_record(false, 4, 4);
  bad.error = RequestError{std::nullopt, "ClientConnectionError", "refused"};
  records.push_back(bad);
  const RunInfo info{.loader = "semianalysis_cc_traces_weka_062126",
                     .hf_dataset = "semianalysisai/cc-traces-weka-062126", .num_dataset_entries = 12,
                     .start_time = "2026-08-20T10:00:00.000000", .end_time = "2026-08-20T10:00:20.000000",
                     .duration_s = 20, .invalid_reasons = {"unsafe_override"}};
  rapidjson::Document d;
  d.Parse(aggregate_json(records, info).c_str());
  ASSERT_FALSE(d.HasParseError());
  EXPECT_EQ(d["request_count"]["avg"].GetInt(), 2);
  EXPECT_EQ(d["error_request_count"]["avg"].GetInt(), 1);
  EXPECT_EQ(d["completed_request_count"]["avg"].GetInt(), 3);
  EXPECT_EQ(d["theoretical_prefix_cache_hit"]["count"].GetInt(), 8);  // successful profiling records only
  EXPECT_EQ(d["theoretical_prefix_cache_hit"]["sum"].GetInt(), 3);
  EXPECT_DOUBLE_EQ(d["theoretical_prefix_cache_hit"]["avg"].GetDouble(), 37.5);
  EXPECT_EQ(d["request_latency"]["count"].GetInt(), 2);
  EXPECT_EQ(d["warmup_metrics"]["request_count"]["avg"].GetInt(), 1);
  EXPECT_STREQ(d["metadata"]["dataset"]["hf_dataset_name"].GetString(), "semianalysisai/cc-traces-weka-062126");
  EXPECT_FALSE(d["metadata"]["submission_valid"].GetBool());
  EXPECT_EQ(d["error_summary"][0]["count"].GetInt(), 1);
  EXPECT_STREQ(d["start_time"].GetString(), "2026-08-20T10:00:00.000000");
}

TEST(AiperfExport, Stats) {
  auto s = metric_stats({4, 1, 3, 2});
  ASSERT_TRUE(s);
  EXPECT_DOUBLE_EQ(s->avg, 2.5);
  EXPECT_DOUBLE_EQ(s->min, 1);
  EXPECT_DOUBLE_EQ(s->max, 4);
  EXPECT_DOUBLE_EQ(s->sum, 10);
  EXPECT_NEAR(s->std, 1.118034, 1e-6);  // population
  for (const auto& [p, v] : s->percentiles) {
    if (p == 50) {
      EXPECT_DOUBLE_EQ(v, 2.5);
    }
    if (p == 90) {
      EXPECT_DOUBLE_EQ(v, 3.7);
    }
  }
  EXPECT_FALSE(metric_stats({}));
}

TEST(AiperfExport, NaiveLocalIso) {
  const std::string s = naive_local_iso(1767225600123456789LL);
  EXPECT_TRUE(std::regex_match(s, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.123456)"))) << s;
}

}  // namespace
}  // namespace ixfake::aiperf
