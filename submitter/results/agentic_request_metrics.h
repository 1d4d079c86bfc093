// request_metrics of an agentic-coding result: InferenceX's
// utils/agentic/aggregation/request_metrics.py compute_request_metrics
// (plus the per-GPU throughput build_agg adds) over the kept records, in
// its key order: qps (completions per 1 s window), latency (ms -> s;
// interactivity as reciprocals of the latency statistics), tokens,
// throughput (+ per_gpu), cache (AIPerf's theoretical prefix-cache hit).
// Numbers are computed as Python computes them (statistics.mean exactly
// rounded, int when every input is an int and the mean is integral;
// pstdev the population one; linear percentiles), so they agree with
// Python's to far more than the 5 decimals the result keeps.
#pragma once

#include <rapidjson/document.h>

#include <cstdint>
#include <vector>

#include "submitter/results/agentic_records.h"

namespace ix {

// aggregation_common.percentile: linear between the closest ranks; 0.0
// for no data.
double PyPercentile(std::vector<double> data, double p);

// statistics.mean of floats: the exact sum divided by n, rounded once.
double PyMean(const std::vector<double>& v);

// statistics.pstdev: the population standard deviation about the exact mean.
double PyPStdev(const std::vector<double>& v);

// statistics.mean of ints: an int when the exact mean is integral, else the
// correctly rounded float.
rapidjson::Value PyMeanOfInts(const std::vector<int64_t>& v);

// The request_metrics object for `records`, with `aggregate` (the parsed
// profile_export_aiperf.json, or an empty object) for the theoretical
// cache hit rate; throughput.per_gpu divides by `num_gpus` when positive.
// Values unrounded (build_agg rounds the whole result).
rapidjson::Value AgenticRequestMetrics(const AgenticRecords& records, const rapidjson::Value& aggregate,
                                       int64_t num_gpus, rapidjson::Document::AllocatorType& a);

}  // namespace ix
