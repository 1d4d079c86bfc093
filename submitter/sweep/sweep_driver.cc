#include "submitter/sweep/sweep_driver.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <set>
#include <thread>
#include <utility>

#include "submitter/sweep/sweep_plan.h"
#include "submitter/sweep/sweep_submit.h"
#include "submitter/sweep/sweep_task.h"

namespace ix {
namespace {

// ---- the submitter's hooks ---------------------------------------------------------

volatile sig_atomic_t g_interrupted = 0;
void OnInterrupt(int) { g_interrupted = 1; }

double SystemNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// 500 ms in steps of 100 ms, so Ctrl-C is answered within a tenth of a
// second; with a stream, over as soon as something arrives.
bool PauseUnlessInterrupted(SweepInbox* stream) {
  for (int i = 0; i < 5 && !g_interrupted; ++i) {
    if (!stream) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    } else if (stream->WaitFor(std::chrono::milliseconds(100))) {
      break;
    }
  }
  if (!g_interrupted) return false;
  g_interrupted = 0;
  return true;
}

// Only a person at a terminal can answer; anything but "c" leaves the sweep
// running (the safe choice: a resume can cancel it later).
bool AskOnTerminal(const std::string& id) {
  std::string answer;
  if (::isatty(STDIN_FILENO)) {
    std::printf("\nCancel sweep %s (c) or leave it running and stop watching (l)? [c/L] ", id.c_str());
    std::fflush(stdout);
    std::getline(std::cin, answer);
  }
  return answer == "c" || answer == "C";
}

// ---- progress text ----------------------------------------------------------------------

void Tally(EntryCounts& c, EntryState s) {
  switch (s) {
    case EntryState::kPending: ++c.pending; break;
    case EntryState::kRunning: ++c.running; break;
    case EntryState::kSucceeded: ++c.succeeded; break;
    case EntryState::kFailed: ++c.failed; break;
    case EntryState::kCancelled: ++c.cancelled; break;
    case EntryState::kSkipped: ++c.skipped; break;
  }
}

// [###xx-->......]: done, failed, cancelled, running, pending, in proportion.
std::string Bar(const EntryCounts& c, int width) {
  const int64_t total = std::max<int64_t>(1, c.total());
  auto n = [&](int64_t x) { return static_cast<int>(x * width / total); };
  std::string b(static_cast<size_t>(n(c.succeeded)), '#');
  b += std::string(static_cast<size_t>(n(c.failed)), 'x');
  b += std::string(static_cast<size_t>(n(c.cancelled + c.skipped)), '-');
  b += std::string(static_cast<size_t>(n(c.running)), '>');
  b.resize(static_cast<size_t>(width), '.');
  return "[" + b + "]";
}

// The ETA assumes the rest take as long as the successes did, as many at a
// time as are running now (at most the throttle).
std::string ProgressLine(const JobRecord& j, const JobProgress& p, double now) {
  const EntryCounts& c = p.counts;
  std::string eta;
  if (c.succeeded > 0 && c.pending + c.running > 0) {
    const double per = p.done_seconds / static_cast<double>(c.succeeded);
    const int64_t parallel = std::max<int64_t>(1, std::min<int64_t>(c.running, std::max<int64_t>(j.throttle, 1)));
    eta = ", ETA " + DurationText(per * static_cast<double>(c.pending + c.running) / static_cast<double>(parallel));
  }
  const std::string elapsed = p.first_start ? DurationText(now - *p.first_start) : "-";
  return j.key + (j.slurm_job_id ? " (job " + std::to_string(*j.slurm_job_id) + ")" : "") + " " + Bar(c, 20) + " " +
         CountsText(c) + ", elapsed " + elapsed + eta;
}

const JobProgress& ProgressOf(const std::map<std::string, JobProgress>& progress, const std::string& key) {
  static const JobProgress kNone;
  auto it = progress.find(key);
  return it == progress.end() ? kNone : it->second;
}

// ---- what a look finds ---------------------------------------------------------------

// Slurm is read every half second at most, however often the stream
// ends a pause early.
constexpr double kPollSeconds = 0.45;

// Slurm's word on an entry whose task it still lists; nullopt when that
// changes nothing. `st`: the entry's status.json, if any.
std::optional<EntryUpdate> FromQueue(const EntryRecord& e, const QueueTask& q, const std::optional<TaskStatus>& st,
                                     StreamTracker& stream, double now) {
  EntryUpdate u;
  u.index = e.index;
  if (q.state == SlurmState::kPending) {
    // The stream can hear a task run before squeue lists it running.
    if (e.state == EntryState::kPending || stream.HeardRunning(e.index)) return std::nullopt;
    u.state = EntryState::kPending;
    return u;
  }
  if (!Final(q.state)) {
    if (e.state == EntryState::kRunning) return std::nullopt;
    u.state = EntryState::kRunning;
    u.started_at = st ? st->started : now;
    return u;
  }
  u.ended_at = now;
  if (q.state == SlurmState::kCompleted) {
    // Its status.json is about to say how it went; with node results it
    // comes through the stream, or not at all (SettleEnded).
    if (!stream.node_results()) return std::nullopt;
    u.state = EntryState::kFailed;
  } else if (q.state == SlurmState::kCancelled) {
    u.state = EntryState::kCancelled;
  } else {
    u.state = EntryState::kFailed;
    u.failure_reason = "Slurm ended the job: " + q.state_name;
  }
  return stream.SettleEnded(e, u, now);
}

// What one look at Slurm and the result directories says of an entry not
// yet final; nullopt when nothing changed. `missing` counts the looks an
// entry's task was absent from the queue.
std::optional<EntryUpdate> Observe(const EntryRecord& e, const SweepManifest& m,
                                   const std::map<std::string, QueueTask>& queue, std::map<int64_t, int>& missing,
                                   StreamTracker& stream, double now) {
  EntryUpdate u;
  u.index = e.index;
  const std::optional<TaskStatus> st = ReadTaskStatus(ResultDir(m, e.index), m.sweep_id);
  if (st && (st->state == "succeeded" || st->state == "failed")) {
    u.state = st->state == "succeeded" ? EntryState::kSucceeded : EntryState::kFailed;
    u.started_at = st->started;
    u.ended_at = st->ended;
    u.exit_code = st->exit_code;
    if (!st->reason.empty()) u.failure_reason = st->reason;
    if (!st->process.empty()) u.failure_process = st->process;
    u.result_path = ResultDir(m, e.index);
    return u;
  }
  auto it = queue.find(e.slurm_task_id);
  if (it != queue.end()) {
    missing.erase(e.index);
    return FromQueue(e, it->second, st, stream, now);
  }
  // Gone from the queue without a result: slurmctld forgot it, or the
  // task died before writing status.json.
  if (++missing[e.index] < 6) return std::nullopt;
  u.state = st || stream.HeardRunning(e.index) ? EntryState::kFailed : EntryState::kCancelled;
  u.failure_reason = "the job left the queue without a result";
  u.ended_at = now;
  return stream.SettleEnded(e, u, now);
}

// The canary and fail-fast rules: the jobs to cancel now, with why. A
// failure stops every array of its bucket (a bucket larger than
// MaxArraySize has several) and no other bucket.
std::vector<std::pair<const JobRecord*, std::string>> JobsToCancel(const LoadedSweep& l, const SweepManifest& m,
                                                                   const std::map<std::string, JobProgress>& progress) {
  const EntryCounts& canary = ProgressOf(progress, "canary").counts;
  const bool canary_failed = canary.failed + canary.cancelled > 0;
  std::map<std::string, int64_t> bucket_failed;  // bucket -> its first failed entry
  for (const JobRecord& j : l.jobs) {
    const std::optional<int64_t>& f = ProgressOf(progress, j.key).first_failed;
    const std::string b = BucketOfJobKey(j.key);
    if (f && (!bucket_failed.count(b) || *f < bucket_failed[b])) bucket_failed[b] = *f;
  }
  std::vector<std::pair<const JobRecord*, std::string>> out;
  for (const JobRecord& j : l.jobs) {
    const JobProgress& p = ProgressOf(progress, j.key);
    if (j.state == JobState::kCancelled || !j.slurm_job_id || p.counts.pending + p.counts.running == 0) continue;
    const std::string bucket = BucketOfJobKey(j.key);
    if (m.fail_fast && j.kind == JobKind::kArray && bucket_failed.count(bucket)) {
      out.emplace_back(&j, "fail-fast: entry " + std::to_string(bucket_failed[bucket]) + " of bucket " + bucket +
                               " failed");
    } else if (j.depends_on == "canary" && canary_failed) {
      out.emplace_back(&j, "the canary failed");
    }
  }
  return out;
}

}  // namespace

WatchHooks TerminalWatchHooks(SweepInbox* stream) {
  WatchHooks h;
  h.now = SystemNow;
  h.pause = [stream] { return PauseUnlessInterrupted(stream); };
  h.confirm_cancel = AskOnTerminal;
  h.redraw = ::isatty(STDOUT_FILENO);
  h.out = stdout;
  h.stream = stream;
  return h;
}

void InstallCtrlCHandler() {
  struct sigaction sa{};
  sa.sa_handler = OnInterrupt;
  sigaction(SIGINT, &sa, nullptr);
}

NewSweep SweepRecordOf(const SweepManifest& m, SweepMode mode, const std::vector<std::string>& argv) {
  NewSweep ns;
  ns.id = m.sweep_id;
  ns.mode = mode;
  ns.sweep_dir = m.sweep_dir;
  ns.argv = argv;
  // In the records' field order (sweep_records.h).
  for (const PlannedJob& j : m.plan.jobs) {
    ns.jobs.push_back({j.key, j.canary ? JobKind::kCanary : JobKind::kArray, JobName(m, j), ScriptPath(m, j),
                       static_cast<int64_t>(j.entries.size()), m.settings.throttle, j.depends_on});
  }
  for (const PlannedEntry& e : m.plan.entries) {
    const std::optional<int64_t> array_index =
        e.job_key == "canary" ? std::nullopt : std::optional<int64_t>(e.array_index);
    ns.entries.push_back(
        {e.index, e.job_key, array_index, e.bucket, e.config_key, e.arm, e.recipe, e.conc, e.entry_json});
  }
  return ns;
}

std::map<std::string, JobProgress> ProgressByJob(const LoadedSweep& l) {
  std::map<std::string, JobProgress> out;
  for (const EntryRecord& e : l.entries) {
    JobProgress& p = out[e.job_key];
    Tally(p.counts, e.state);
    if (e.state == EntryState::kFailed && !p.first_failed) p.first_failed = e.index;
    if (e.started_at && (!p.first_start || *e.started_at < *p.first_start)) p.first_start = e.started_at;
    if (e.state == EntryState::kSucceeded && e.started_at && e.ended_at) p.done_seconds += *e.ended_at - *e.started_at;
  }
  return out;
}

EntryCounts CountEntries(const LoadedSweep& l) {
  EntryCounts all;
  for (const EntryRecord& e : l.entries) Tally(all, e.state);
  return all;
}

std::string CountsText(const EntryCounts& c) {
  return "pending " + std::to_string(c.pending) + ", running " + std::to_string(c.running) + ", done " +
         std::to_string(c.succeeded) + ", failed " + std::to_string(c.failed) + ", cancelled " +
         std::to_string(c.cancelled + c.skipped);
}

std::string DurationText(double s) {
  char buf[32];
  const long v = static_cast<long>(s);
  if (v >= 3600) std::snprintf(buf, sizeof buf, "%ldh%02ldm", v / 3600, v / 60 % 60);
  else if (v >= 60) std::snprintf(buf, sizeof buf, "%ldm%02lds", v / 60, v % 60);
  else std::snprintf(buf, sizeof buf, "%lds", v);
  return buf;
}

// ---- SweepDriver ----------------------------------------------------------------------

SweepDriver::SweepDriver(SweepStore& store, SlurmCli& cli, std::string sweep_id, const SweepManifest& m,
                         WatchHooks hooks)
    : store_(store), cli_(cli), id_(std::move(sweep_id)), m_(m), hooks_(std::move(hooks)), stream_(m, hooks_.stream) {}

Status SweepDriver::Submit() { return SubmitPending(store_, id_, m_, cli_); }

int SweepDriver::Watch() {
  started_ = hooks_.now();
  for (;;) {
    Result<LoadedSweep> l = Look();
    if (!l) {
      std::cerr << "ixsubmit sweep: " << l.error().message << "\n";
      return 1;
    }
    Show(l.value());
    const EntryCounts all = CountEntries(l.value());
    const int64_t awaiting = AwaitingResults(l.value());  // every look: it times each entry's wait
    if (all.pending + all.running == 0 && awaiting == 0) return Finish(all);
    if (hooks_.pause()) return OnCtrlC(l.value());
  }
}

Result<LoadedSweep> SweepDriver::Look() {
  TakeStream();
  Result<LoadedSweep> l = store_.LoadSweep(id_);
  if (!l) return l;
  const double now = hooks_.now();
  if (!stream_.enabled() || !last_poll_ || now - *last_poll_ >= kPollSeconds) {
    last_poll_ = now;
    queue_ = ReadQueue(l.value());
    if (RecordObservations(l.value(), queue_)) {
      l = store_.LoadSweep(id_);
      if (!l) return l;
    }
  }
  if (ApplyCancelRules(l.value())) l = store_.LoadSweep(id_);
  return l;
}

void SweepDriver::TakeStream() {
  std::vector<std::string> problems;
  const std::vector<EntryUpdate> updates = stream_.Take(problems);
  for (const std::string& p : problems) std::fprintf(stderr, "ixsubmit sweep: %s\n", p.c_str());
  if (updates.empty()) return;
  // The tasks' word is final; what Slurm made final first stays (a task
  // cancelled by fail-fast reports failed as it dies).
  Result<int64_t> n = store_.UpdateEntryStates(id_, updates, FinalEntries::kKeep);
  if (!n) std::cerr << "ixsubmit sweep: " << n.error().message << "\n";
}

// Every task of the sweep's submitted jobs that slurmctld still knows, by
// task id ("123_4"); empty when squeue fails (the next look tries again).
// Pending tasks whose dependency can never be met are cancelled now, not
// left behind.
std::map<std::string, QueueTask> SweepDriver::ReadQueue(const LoadedSweep& l) {
  std::vector<int64_t> ids;
  for (const JobRecord& j : l.jobs) {
    if (j.slurm_job_id) ids.push_back(*j.slurm_job_id);
  }
  std::map<std::string, QueueTask> queue;
  if (!ids.empty()) {
    if (Result<std::vector<QueueTask>> q = cli_.Queue(ids); q) {
      for (const QueueTask& t : q.value()) queue[t.id.ToString()] = t;
    }
  }
  for (const auto& [task, q] : queue) {
    if (q.reason.find("DependencyNeverSatisfied") != std::string::npos) (void)cli_.Cancel({task});
  }
  return queue;
}

bool SweepDriver::RecordObservations(const LoadedSweep& l, const std::map<std::string, QueueTask>& queue) {
  const double now = hooks_.now();
  std::vector<EntryUpdate> updates;
  for (const EntryRecord& e : l.entries) {
    if (IsFinal(e.state) || e.slurm_task_id.empty()) continue;
    if (std::optional<EntryUpdate> u = Observe(e, m_, queue, missing_, stream_, now)) updates.push_back(*u);
  }
  if (updates.empty()) return false;
  // Final entries keep their state: Slurm's view may lag the status.json a task wrote.
  Result<int64_t> n = store_.UpdateEntryStates(id_, updates, FinalEntries::kKeep);
  if (!n) std::cerr << "ixsubmit sweep: " << n.error().message << "\n";
  return true;
}

bool SweepDriver::ApplyCancelRules(const LoadedSweep& l) {
  const auto cancel = JobsToCancel(l, m_, ProgressByJob(l));
  for (const auto& [job, why] : cancel) {
    CancelJob(l, *job);
    (void)store_.MarkJobCancelled(id_, job->key, why);
    std::fprintf(hooks_.out, "sweep %s: cancelled %s (job %lld): %s\n", id_.c_str(), job->key.c_str(),
                 static_cast<long long>(*job->slurm_job_id), why.c_str());
  }
  return !cancel.empty();
}

// The whole job, unless one of its entries already failed while Slurm
// still runs its task: that task is finishing (writing and sending its
// results, cancelling the rest of its array itself), as after a step's
// failure from the stream, and only the others are cancelled.
void SweepDriver::CancelJob(const LoadedSweep& l, const JobRecord& j) {
  const std::string id = std::to_string(*j.slurm_job_id);
  std::set<std::string> finishing;
  for (const EntryRecord& e : l.entries) {
    auto it = e.job_key == j.key && e.state == EntryState::kFailed ? queue_.find(e.slurm_task_id) : queue_.end();
    if (it != queue_.end() && !Final(it->second.state)) finishing.insert(e.slurm_task_id);
  }
  if (finishing.empty()) {
    (void)cli_.Cancel({id});
    return;
  }
  (void)cli_.Cancel({id}, SlurmState::kPending);
  std::vector<std::string> others;
  for (const auto& [task, q] : queue_) {
    if (q.id.job_id == *j.slurm_job_id && !Final(q.state) && !finishing.count(task)) others.push_back(task);
  }
  if (!others.empty()) (void)cli_.Cancel(others);
}

int64_t SweepDriver::AwaitingResults(const LoadedSweep& l) {
  if (!stream_.node_results()) return 0;
  const double now = hooks_.now();
  int64_t n = 0;
  for (const EntryRecord& e : l.entries) n += stream_.AwaitingResults(e, now) ? 1 : 0;
  const EntryCounts all = CountEntries(l);
  if (n > 0 && all.pending + all.running == 0 && !said_awaiting_) {
    said_awaiting_ = true;
    std::fprintf(hooks_.out, "sweep %s: waiting up to %.0f s for the results of %lld entries from the node agents\n",
                 id_.c_str(), kResultsGraceSeconds, static_cast<long long>(n));
  }
  return n;
}

void SweepDriver::Show(const LoadedSweep& l) {
  const std::map<std::string, JobProgress> progress = ProgressByJob(l);
  if (hooks_.redraw) {
    if (drawn_) std::fprintf(hooks_.out, "\x1b[%dA", drawn_);
    const double now = hooks_.now();
    for (const JobRecord& j : l.jobs) {
      std::fprintf(hooks_.out, "\x1b[2K%s\n", ProgressLine(j, ProgressOf(progress, j.key), now).c_str());
    }
    drawn_ = static_cast<int>(l.jobs.size());
  } else {
    for (const JobRecord& j : l.jobs) {
      const std::string state = CountsText(ProgressOf(progress, j.key).counts);
      if (last_line_[j.key] != state) std::fprintf(hooks_.out, "sweep %s: %s: %s\n", id_.c_str(), j.key.c_str(), state.c_str());
      last_line_[j.key] = state;
    }
  }
  std::fflush(hooks_.out);
}

int SweepDriver::Finish(const EntryCounts& all) {
  const bool ok = all.failed + all.cancelled + all.skipped == 0;
  (void)store_.SetSweepState(id_, ok ? SweepState::kSucceeded : all.failed ? SweepState::kFailed : SweepState::kCancelled);
  std::fprintf(hooks_.out, "sweep %s %s after %s: %s. Results: %s/results; ixsubmit status %s\n", id_.c_str(),
               ok ? "succeeded" : "failed", DurationText(hooks_.now() - started_).c_str(), CountsText(all).c_str(),
               m_.sweep_dir.c_str(), id_.c_str());
  std::fflush(hooks_.out);
  return ok ? 0 : 1;
}

// Ctrl-C: cancel every job of the sweep and record it, or leave it running
// for a later --resume. 130 either way, as for a shell's SIGINT.
int SweepDriver::OnCtrlC(const LoadedSweep& l) {
  if (!hooks_.confirm_cancel(id_)) {
    std::fprintf(hooks_.out, "sweep %s left running; watch again with: ixsubmit sweep --resume %s\n", id_.c_str(),
                 id_.c_str());
    return 130;
  }
  for (const JobRecord& j : l.jobs) {
    if (j.slurm_job_id && j.state != JobState::kCancelled) {
      (void)cli_.Cancel({std::to_string(*j.slurm_job_id)});
      (void)store_.MarkJobCancelled(id_, j.key, "cancelled by the user (Ctrl-C)");
    }
  }
  (void)store_.SetSweepState(id_, SweepState::kCancelled);
  std::fprintf(hooks_.out, "sweep %s cancelled\n", id_.c_str());
  return 130;
}

}  // namespace ix
