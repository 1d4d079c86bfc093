// ServingMetrics: the metrics InferenceX's client
// (utils/bench_serving/benchmark_serving.py, calculate_metrics) reports for
// a run, computed by the same rules from ix-fake-client's records, so what
// reads the real client's result (process_result.py, aggregate_power.py,
// this project's agg results) reads the fake's.
// Rules kept: only successful requests count; TPOT of a request is
// (latency - TTFT) / (output tokens - 1), for requests with more than one
// output token; TTFT is 0 for a request that reported none (the real client
// without streaming); throughputs divide by the benchmark's duration; std is
// numpy's (population), percentiles numpy's default (linear).
// The fake has no per-chunk times, so a request's inter-token latencies are
// its TPOT once per gap (output tokens - 1), which keeps ITL's mean the
// token-weighted TPOT the real ITLs average to.
#pragma once

#include <string>
#include <vector>

namespace ixfake::client {

// One successful request, in milliseconds and tokens.
struct ServedRequest {
  double latency_ms = 0;
  double ttft_ms = 0;
  int prompt_tokens = 0;
  int output_tokens = 0;
};

// mean, median, std and the percentiles InferenceX's client reports (its
// default --metric-percentiles 90,99,99.9) of one metric, in ms (0 for no
// values, as numpy is given `or 0` by the real client).
struct MetricStats {
  double mean = 0, median = 0, std = 0, p90 = 0, p99 = 0, p99_9 = 0;
};

struct ServingMetrics {
  int completed = 0;
  long total_input_tokens = 0, total_output_tokens = 0;
  double request_throughput = 0, output_throughput = 0, total_token_throughput = 0;  // per second
  MetricStats ttft, tpot, itl, e2el;
};

MetricStats StatsOf(std::vector<double> values_ms);
ServingMetrics ComputeServingMetrics(const std::vector<ServedRequest>& requests, double duration_s);

}  // namespace ixfake::client
