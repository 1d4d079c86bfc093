// StepWatch: the running steps the agent watches, from a step's `telemetry`
// event (ix-stepd hands over the step's gpu_metrics.csv as a descriptor,
// with the step's GPUs and its engines' /metrics URLs) until its `finished`
// event, or until the process that sent it (ix-stepd) is gone. Each sample
// appends the step's GPUs' rows to its CSV (nvidia-smi's format,
// gpu_metrics_csv.h) and measures its process tree; a finished step gets
// one last row set at once, so the CSV brackets the benchmark's end.
//
// Invariants: a watched step's CSV descriptor is a regular file (a FIFO or
// socket a job user passes would block the agent, and is refused); at most
// kMaxCsvBytes are written to it; the header is written exactly once,
// before the first row. The OS is behind the arguments (processes and GPU
// readings come in), so the logic is tested without either.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/proc_fs.h"
#include "core/base/result.h"
#include "core/base/unique_fd.h"
#include "core/process/hang_watch.h"
#include "node_agent/gpu_sample.h"

namespace ix {

inline constexpr uint64_t kMaxCsvBytes = uint64_t{256} << 20;

// What a `telemetry` event asks for (the stamped event's fields).
struct TelemetryRequest {
  std::string step, sweep;
  int64_t entry = -1;
  uid_t uid = 0;                           // the sender's (the kernel's word), set by the caller
  std::vector<unsigned> gpus;              // NVML indices
  std::vector<std::string> metrics_urls;   // loopback only (checked by the fetcher)
};
// The request in a stamped `telemetry` event; an Error names the field.
Result<TelemetryRequest> ParseTelemetryEvent(std::string_view stamped_json);

// A step's process tree at one sample.
struct TreeUsage {
  size_t processes = 0;
  uint64_t rss_bytes = 0;
  double cpu_seconds = 0;  // user + system, summed over the live tree
};
// The tree under (and including) `root` in `all`.
TreeUsage MeasureTree(const std::vector<ProcessInfo>& all, pid_t root, uint64_t page_bytes, double ticks_per_second);

// One watched step as the metrics see it.
struct WatchedStepView {
  std::string step, sweep;
  int64_t entry = -1;
  uid_t uid = 0;
  TreeUsage usage;
  bool hung = false;
  double stalled_seconds = 0;
  std::optional<double> requests_running, generation_tokens;
};

class StepWatch {
 public:
  explicit StepWatch(double hang_after_seconds) : hang_after_(hang_after_seconds) {}

  // Watches `request.step`, sent by `sender` (its pid and start time: the
  // step is over when that process is), writing rows to `csv`. A step
  // already watched is replaced (ix-stepd sends telemetry once; a second is
  // a restart of the same step id).
  Status Add(TelemetryRequest request, ProcessId sender, UniqueFd csv);
  bool Watching(const std::string& step) const { return steps_.count(step) > 0; }
  size_t size() const { return steps_.size(); }

  // Appends `step`'s rows from `gpus` now: at its start, so that the first
  // sample precedes the benchmark however soon it begins.
  void WriteNow(const std::string& step, const GpuSnapshot& gpus);
  // Appends each step's GPUs' rows from `gpus` and measures its tree.
  void Sample(const GpuSnapshot& gpus, const std::vector<ProcessInfo>& processes, uint64_t page_bytes,
              double ticks_per_second);
  // The URLs to read for hang detection, per step.
  std::vector<std::pair<std::string, std::vector<std::string>>> MetricsUrls() const;
  // An engine reading of step `step` at `now` (summed over its engines;
  // unset when none answered). True when a hang began with it.
  bool ObserveEngines(const std::string& step, double now, std::optional<double> requests_running,
                      std::optional<double> generation_tokens);
  // The step ended: one last row set from `gpus`, then it is forgotten.
  // False when the step was not watched.
  bool Finish(const std::string& step, const GpuSnapshot& gpus);
  // Steps whose sender is gone (a killed ix-stepd sends no `finished`).
  std::vector<std::string> Orphans() const;

  std::vector<WatchedStepView> View(double now) const;
  // What went wrong writing CSVs since the last call (for the log).
  std::vector<std::string> TakeProblems();

 private:
  struct Watched {
    TelemetryRequest request;
    ProcessId sender;
    UniqueFd csv;
    uint64_t written = 0;
    bool header_done = false;
    bool write_failed = false;
    TreeUsage usage;
    HangWatch hang;
    std::optional<double> requests_running, generation_tokens;
  };
  void WriteRows(Watched& w, const GpuSnapshot& gpus);

  double hang_after_;
  std::map<std::string, Watched> steps_;
  std::vector<std::string> problems_;
};

}  // namespace ix
