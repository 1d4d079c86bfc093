// InferenceX's utils/aggregate_power.py (single node), in C++: integrates
// each GPU's power from gpu_metrics.csv over the client's benchmark window
// (trapezoids, linear interpolation at the window's ends), decides
// power_valid by the same rules (bracketed window, no gap over 3 s, the
// expected number of GPUs, a sane benchmark window and token counts), and
// patches the agg result the same way: the power keys removed, then
// power_metric_schema_version, power_valid and, when valid, the energy
// metrics rounded as Python's round() does. Same order of floating-point
// operations as the Python, so the numbers are equal, not just close.
//
// Multinode entries: aggregate_power_multinode.py reads a power manifest
// this project does not produce, so only its "missing" verdict is ported
// (MarkMultinodePowerMissing).
//
// Not ported: the validation sidecar (power_validation_*.json) and the
// AMD accumulator cross-check, which do not change the agg result; ISO 8601
// timestamps (nvidia-smi's format and epoch numbers are read, which is
// what the node agent writes).
#pragma once

#include <rapidjson/document.h>

#include <optional>
#include <string>
#include <vector>

namespace ix {

// What one integration found: valid or the reasons why not (in the order
// aggregate_power.py finds them), and the energy when every GPU had some.
// The per-GPU details are power_validation.json's, keyed by GPU id in
// gpu_ids order (a GPU without a bracketed window has no gap or energy).
struct PowerIntegration {
  std::vector<std::string> reasons;
  std::vector<std::string> gpu_ids;  // observed, sorted as _gpu_sort_key sorts
  std::optional<double> total_gpu_energy_j, avg_total_gpu_power_w, avg_power_w;
  std::vector<std::pair<std::string, int64_t>> sample_counts;
  std::vector<std::pair<std::string, double>> max_sample_gaps_s, energies_j;
  std::vector<std::pair<std::string, std::vector<std::string>>> device_issues;
  bool valid() const { return reasons.empty(); }
};

// The benchmark window and counts _load_benchmark_data read (a count that
// is not a positive int is 0, with its reason).
struct PowerBenchmark {
  double start = 0, end = 0, reported_duration = 0;
  int64_t completed = 0, input_tokens = 0, output_tokens = 0;
};

// What run() decided: the reasons (empty: valid), the window (none when
// the benchmark result had none), the integration, and when valid the
// _derived_metrics, unrounded, in Python's order.
struct PowerRun {
  std::vector<std::string> reasons;
  std::optional<PowerBenchmark> benchmark;
  PowerIntegration integration;
  std::vector<std::pair<std::string, double>> metrics;
  bool valid() const { return reasons.empty(); }
};

// integrate_power(): `csv` is the file's text.
PowerIntegration IntegratePower(const std::string& csv, double start_unix, double end_unix, int expected_gpus,
                                double max_sample_gap_s = 3.0);

// run(): validates the benchmark result `bench` (the client's JSON),
// integrates `csv` (nullopt: no file) and patches `agg` in place. Returns
// the reasons power is invalid (empty: valid).
std::vector<std::string> AggregatePower(const std::optional<std::string>& csv, const rapidjson::Value& bench,
                                        rapidjson::Document& agg, int expected_gpus);

// The same, with everything power_validation.json reports.
PowerRun RunPower(const std::optional<std::string>& csv, const rapidjson::Value& bench, rapidjson::Document& agg,
                  int expected_gpus);

// _patch_power_result: the power keys removed, power_metric_schema_version
// 2 and power_valid appended, and when valid `metrics` rounded (3 decimals
// for *_w and *_j, else 6; floats stay floats).
void PatchPowerResult(rapidjson::Document& agg, bool valid, const std::vector<std::pair<std::string, double>>& metrics);

// _validation_payload: power_validation.json's object (accumulator_check
// null: NVIDIA's nvidia-smi stream has no energy snapshots), with the
// telemetry and benchmark paths as given.
rapidjson::Document PowerValidationPayload(const PowerRun& run, int expected_gpus, const std::string& csv_path,
                                           const std::string& bench_path);

// aggregate_power_multinode.py's run() where there is no power manifest
// (LOGS/power, which srt-slurm's exporters write and this project does not
// produce): reasons ["power_artifacts_missing"], and _patch_agg's edit of
// `agg`: every whole-run and per-role power metric and
// power_invalid_reasons removed, power_metric_schema_version 2 and
// power_valid 0 set (in place when present, else appended, as a dict
// assignment does). Returns the reasons.
std::vector<std::string> MarkMultinodePowerMissing(rapidjson::Document& agg);

// Python's datetime.strptime(s, "%Y/%m/%d %H:%M:%S[.%f]").timestamp() (local
// time) or a plain epoch number (ms when above 1e12), as _parse_timestamp.
std::optional<double> ParsePowerTimestamp(const std::string& s);

}  // namespace ix
