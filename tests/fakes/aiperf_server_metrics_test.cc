// Unit tests of the fake aiperf's Prometheus parsing and server-metrics
// artifacts (aiperf_server_metrics.h).
#include "aiperf_server_metrics.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

namespace ixfake::aiperf {
namespace {

std::string body(double prompt, double running, double hist_count, double hist_sum) {
  return "# HELP vllm:prompt_tokens_total Prefill tokens.\n"
         "# TYPE vllm:prompt_tokens_total counter\n"
         "vllm:prompt_tokens_total{engine=\"0\",model_name=\"m\"} " + std::to_string(prompt) + "\n"
         "vllm:prompt_tokens_created{engine=\"0\",model_name=\"m\"} 1.7e9\n"
         "# TYPE vllm:num_requests_running gauge\n"
         "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} " + std::to_string(running) + "\n"
         "# TYPE vllm:e2e_request_latency_seconds histogram\n"
         "vllm:e2e_request_latency_seconds_bucket{engine=\"0\",le=\"1\"} " + std::to_string(hist_count) + "\n"
         "vllm:e2e_request_latency_seconds_bucket{engine=\"0\",le=\"+Inf\"} " + std::to_string(hist_count) + "\n"
         "vllm:e2e_request_latency_seconds_sum{engine=\"0\"} " + std::to_string(hist_sum) + "\n"
         "vllm:e2e_request_latency_seconds_count{engine=\"0\"} " + std::to_string(hist_count) + "\n"
         "# TYPE vllm:prefix_cache_hits counter\n"
         "vllm:prefix_cache_hits_total{engine=\"0\"} " + std::to_string(prompt / 2) + "\n"
         "router_untyped{path=\"a\\\"b\"} 7 1700000000000\n";
}

TEST(AiperfServerMetrics, ParsesFamiliesAsPrometheusClient) {
  Scrape s = parse_prometheus(body(100, 2, 4, 2.0));
  ASSERT_EQ(s.count("vllm:prompt_tokens"), 1u);  // "_total" stripped
  EXPECT_EQ(s["vllm:prompt_tokens"].type, "counter");
  EXPECT_EQ(s["vllm:prompt_tokens"].help, "Prefill tokens.");
  ASSERT_EQ(s["vllm:prompt_tokens"].series.size(), 1u);
  EXPECT_DOUBLE_EQ(s["vllm:prompt_tokens"].series.begin()->second.value, 100);
  EXPECT_EQ(s["vllm:prefix_cache_hits"].type, "counter");  // TYPE without _total, sample with
  const auto& h = s["vllm:e2e_request_latency_seconds"];
  EXPECT_EQ(h.type, "histogram");
  ASSERT_EQ(h.series.size(), 1u);
  const SeriesValue& hv = h.series.begin()->second;
  EXPECT_DOUBLE_EQ(hv.count, 4);
  EXPECT_DOUBLE_EQ(hv.sum, 2.0);
  ASSERT_EQ(hv.buckets.size(), 2u);
  EXPECT_EQ(hv.buckets[1].first, "+Inf");
  EXPECT_EQ(hv.labels.size(), 1u);  // "le" is not a series label
  ASSERT_EQ(s.count("router_untyped"), 1u);
  EXPECT_EQ(s["router_untyped"].type, "unknown");
  EXPECT_EQ(s["router_untyped"].series.begin()->second.labels[0].second, "a\"b");
}

TEST(AiperfServerMetrics, ProfilingStatsAndTimeslices) {
  ServerMetrics sm({"http://localhost:8888/metrics", "http://localhost:9999/metrics"});
  sm.add(0, 1'000'000'000, parse_prometheus(body(100, 2, 4, 2.0)));
  sm.add(1, 1'000'000'000, std::nullopt);
  sm.add(0, 2'000'000'000, parse_prometheus(body(150, 4, 6, 3.0)));
  sm.add(0, 3'000'000'000, parse_prometheus(body(300, 0, 10, 5.0)));
  rapidjson::Document d;
  d.Parse(sm.json("0.12.0+fake", "id", R"({"a":1})").c_str());
  ASSERT_FALSE(d.HasParseError());
  EXPECT_EQ(d["summary"]["endpoints_configured"].Size(), 2u);
  EXPECT_EQ(d["summary"]["endpoints_successful"].Size(), 1u);
  EXPECT_EQ(d["summary"]["endpoint_info"]["http://localhost:9999/metrics"]["failed_fetches"].GetInt(), 1);
  const auto& m = d["metrics"];
  const auto& prompt = m["vllm:prompt_tokens"]["series"][0];
  EXPECT_STREQ(prompt["endpoint_url"].GetString(), "http://localhost:8888/metrics");
  EXPECT_STREQ(prompt["labels"]["engine"].GetString(), "0");
  EXPECT_DOUBLE_EQ(prompt["stats"]["total"].GetDouble(), 200);
  EXPECT_DOUBLE_EQ(prompt["stats"]["rate"].GetDouble(), 100);
  EXPECT_DOUBLE_EQ(prompt["stats"]["rate_max"].GetDouble(), 150);
  EXPECT_EQ(prompt["timeslices"].Size(), 2u);
  EXPECT_STREQ(m["vllm:prompt_tokens"]["unit"].GetString(), "tokens");
  const auto& running = m["vllm:num_requests_running"]["series"][0]["stats"];
  EXPECT_DOUBLE_EQ(running["avg"].GetDouble(), 2);
  EXPECT_DOUBLE_EQ(running["max"].GetDouble(), 4);
  EXPECT_DOUBLE_EQ(running["min"].GetDouble(), 0);
  EXPECT_TRUE(running.HasMember("p99"));
  const auto& hist = m["vllm:e2e_request_latency_seconds"]["series"][0];
  EXPECT_DOUBLE_EQ(hist["stats"]["count"].GetDouble(), 6);
  EXPECT_DOUBLE_EQ(hist["stats"]["sum"].GetDouble(), 3);
  EXPECT_DOUBLE_EQ(hist["buckets"]["+Inf"].GetDouble(), 6);
  EXPECT_EQ(d["input_config"]["a"].GetInt(), 1);

  const std::string csv = sm.csv();
  EXPECT_EQ(csv.rfind("Endpoint,Metric,Labels,avg", 0), 0u) << csv;  // gauges first
  EXPECT_NE(csv.find("\n\nEndpoint,Metric,Labels,total,rate\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("vllm:prompt_tokens,engine=0;model_name=m,200,100"), std::string::npos) << csv;
}

TEST(AiperfServerMetrics, CounterResetCountsZero) {
  ServerMetrics sm({"http://h:1/metrics"});
  sm.add(0, 1'000'000'000, parse_prometheus(body(500, 0, 0, 0)));
  sm.add(0, 2'000'000'000, parse_prometheus(body(20, 0, 0, 0)));
  rapidjson::Document d;
  d.Parse(sm.json("v", "id", "{}").c_str());
  EXPECT_DOUBLE_EQ(d["metrics"]["vllm:prompt_tokens"]["series"][0]["stats"]["total"].GetDouble(), 0);
}

}  // namespace
}  // namespace ixfake::aiperf
