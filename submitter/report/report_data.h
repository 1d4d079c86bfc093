// ReportData: what `ixsubmit report` draws, read from one sweep's directory
// (sweep.json, and per entry status.json and agg_RESULT_FILENAME.json) by
// report_source.h, so the drawing (report_html.h) is tested without a sweep.
//
// Invariants: entries are in sweep order (index 0..N-1); a metric is set
// only when the entry has an agg result (has_result); joules_per_output_token
// only when power_valid; log hrefs are relative to the report's own folder.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ix {

// One sweep entry: where it ran, how it ended, and its numbers as
// InferenceX's agg result has them (seconds, tokens/s, tokens/s/user).
struct ReportEntry {
  int64_t index = 0;
  std::string config_key;  // the InferenceX config key ("dsv41flash-fp4-b300-vllm-...")
  std::string bucket;      // "1k1k", "canary", ...
  std::string arm;         // "tp4", "tep4", "dep4", ...
  int64_t conc = 0;
  int64_t gpus = 0;
  std::string state;           // "succeeded", "failed", "running", "pending", "cancelled"
  std::string slurm_job;       // "1234_5" (array task) or "1233" (canary); "" when never started
  std::string failure_reason;  // failure.json's reason or srun's status; "" unless failed
  std::string failure_process; // the process that failed ("vllm-rank2", "router"); may be ""
  std::string placement;       // "GPUs 0-3 · NUMA 0 · cores 0-27,56-83" (readable, as ix-stepd got it)
  std::vector<std::pair<std::string, std::string>> logs;  // (label, relative href), e.g. ("server.log", "results/3/server.log")

  bool has_result = false;
  double tput_per_gpu = 0;         // total tokens/s per GPU
  double output_tput_per_gpu = 0;  // output tokens/s per GPU
  double median_intvty = 0;        // tokens/s/user = 1000 / median TPOT (ms)
  double mean_ttft_s = 0, p99_ttft_s = 0;
  double median_tpot_s = 0, median_e2el_s = 0;
  bool power_valid = false;
  std::optional<double> joules_per_output_token;
  std::optional<double> avg_power_w;

  // DEP: the sessions each data-parallel rank served (index = rank); empty
  // for arms without a router.
  std::vector<int64_t> sessions_per_rank;
};

// The whole report: the sweep and its entries (invariants above).
struct ReportData {
  std::string sweep_id;   // "sw-20261205-182233-3f9a"
  std::string mode;       // "full-sweep-fail-fast"
  std::string generated;  // when the report was written, "2026-12-05 18:40:02 UTC"
  std::vector<ReportEntry> entries;
};

}  // namespace ix
