// SweepDriver: runs a recorded sweep to its end against Slurm and the
// store. It submits what is not yet submitted (SubmitPending's two-phase
// rules: nothing is ever submitted twice), then watches: each look reads
// squeue and the entries' status.json files into the store, applies the
// canary and fail-fast rules (scancel, recorded with why), shows progress,
// and the watch ends when every entry is final. Ctrl-C during the pause
// between looks asks whether to cancel the sweep or leave it running. A
// resumed submitter runs the same driver on the same store: what was
// submitted is known, and the watch picks up where Slurm is.
//
// The clock, the pause between looks and the question to the user are
// WatchHooks, so tests drive it against a fake Slurm without waiting;
// TerminalWatchHooks are the submitter's.
//
// With the sweep's stream (WatchHooks::stream, fed by the sweep's
// collector: sweep_inbox.h, sweep_stream.h) each look first takes what the
// node agents sent: the entries' states as their tasks report them, a
// step's failure (under fail-fast its bucket is cancelled in the same look,
// sparing the failed task, which is still sending its results), and result
// files into results/INDEX/. An item arriving ends the pause at once; Slurm
// is still polled every half second, no more often.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/base/result.h"
#include "submitter/sweep/slurm_cli.h"
#include "submitter/sweep/sweep_files.h"
#include "submitter/sweep/sweep_store.h"
#include "submitter/sweep/sweep_stream.h"

namespace ix {

// What the watch needs from the world besides Slurm and the store.
// Invariant: now, pause and confirm_cancel are set; out is open.
struct WatchHooks {
  // Seconds since the epoch: entry start and end times, elapsed and ETA.
  std::function<double()> now;
  // Waits before the next look; true when the user pressed Ctrl-C meanwhile.
  std::function<bool()> pause;
  // After Ctrl-C: true to cancel the sweep, false to leave it running.
  std::function<bool(const std::string& sweep_id)> confirm_cancel;
  // A terminal: one progress bar per job, redrawn in place; otherwise a
  // line per job whenever its counts change (a log stays readable).
  bool redraw = false;
  std::FILE* out = stdout;
  // The sweep's stream; null: none (Slurm and status.json only).
  SweepInbox* stream = nullptr;
};

// The submitter's hooks: the system clock; 500 ms between looks, cut short
// by Ctrl-C (InstallCtrlCHandler) and, with a `stream`, by an item
// arriving; on Ctrl-C the question on the terminal, "[c/L]" (without a
// terminal the sweep is left running); bars redrawn when stdout is a
// terminal.
WatchHooks TerminalWatchHooks(SweepInbox* stream = nullptr);
// Makes SIGINT set the flag TerminalWatchHooks' pause reads instead of
// ending the process. Installed before the first sbatch, so a Ctrl-C while
// jobs are submitted is answered at the first pause, once the store holds
// every job.
void InstallCtrlCHandler();

// The store's record of the planned sweep `m` (ns.id = m.sweep_id): its
// jobs in plan order with their names, scripts, array sizes, throttle and
// dependencies, and one entry per planned entry.
NewSweep SweepRecordOf(const SweepManifest& m, SweepMode mode, const std::vector<std::string>& argv);

// ---- progress ---------------------------------------------------------------------

// One job's entries: their counts, its first failed entry, the first start
// and the time its successful entries took (for the ETA).
struct JobProgress {
  EntryCounts counts;
  std::optional<int64_t> first_failed;
  std::optional<double> first_start;
  double done_seconds = 0;
};
// Per job key.
std::map<std::string, JobProgress> ProgressByJob(const LoadedSweep& l);
// Every entry of the sweep.
EntryCounts CountEntries(const LoadedSweep& l);
// "pending 1, running 2, done 3, failed 0, cancelled 0" (skipped entries
// count as cancelled).
std::string CountsText(const EntryCounts& c);
// "12s", "3m05s", "2h07m".
std::string DurationText(double seconds);

// ---- the driver -------------------------------------------------------------------

class SweepDriver {
 public:
  // `m` is the sweep's manifest (sweep.json); `sweep_id` the store's id.
  // All of them must outlive the driver.
  SweepDriver(SweepStore& store, SlurmCli& cli, std::string sweep_id, const SweepManifest& m, WatchHooks hooks);

  // Submits every job not yet submitted, in order (the canary first, the
  // arrays after it with afterok on its job id): SubmitPending.
  Status Submit();
  // Looks until every entry is final (and, with node results, their
  // results are in or given up on), then records the sweep's final state
  // and prints the summary. Exit status: 0 every entry succeeded, 1 any
  // failed or was cancelled (or the store failed), 130 after Ctrl-C.
  int Watch();

 private:
  // One look: Slurm and the result directories into the store, then the
  // canary and fail-fast rules; the sweep as it stands after it.
  Result<LoadedSweep> Look();
  // What the stream brought since the last look, into the store.
  void TakeStream();
  std::map<std::string, QueueTask> ReadQueue(const LoadedSweep& l);
  // Records what changed since the last look; whether anything did.
  bool RecordObservations(const LoadedSweep& l, const std::map<std::string, QueueTask>& queue);
  // Cancels the jobs the canary and fail-fast rules stop; whether any.
  bool ApplyCancelRules(const LoadedSweep& l);
  void CancelJob(const LoadedSweep& l, const JobRecord& j);
  // Final entries whose results are still on their way (node results).
  int64_t AwaitingResults(const LoadedSweep& l);
  void Show(const LoadedSweep& l);
  int Finish(const EntryCounts& all);
  int OnCtrlC(const LoadedSweep& l);

  SweepStore& store_;
  SlurmCli& cli_;
  std::string id_;
  const SweepManifest& m_;
  WatchHooks hooks_;
  StreamTracker stream_;
  double started_ = 0;
  std::optional<double> last_poll_;               // when Slurm was last read
  std::map<std::string, QueueTask> queue_;        // what it said then, by task id
  bool said_awaiting_ = false;
  std::map<int64_t, int> missing_;                 // entry -> looks its task was absent from the queue
  std::map<std::string, std::string> last_line_;   // job key -> the counts last printed (no terminal)
  int drawn_ = 0;                                  // bar lines on the terminal to redraw
};

}  // namespace ix
