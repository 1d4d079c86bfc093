#include "submitter/sweep_command.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <random>
#include <thread>

#include "core/base/file_text.h"
#include "core/process/process.h"
#include "core/recipe/recipe_dir.h"
#include "submitter/sweep/slurm_cli.h"
#include "submitter/sweep/sweep_store.h"
#include "submitter/matrix_options.h"
#include "submitter/sweep/sweep_container.h"
#include "submitter/sweep/sweep_db.h"
#include "submitter/sweep/sweep_dir.h"
#include "submitter/sweep/sweep_files.h"
#include "submitter/sweep/sweep_plan.h"
#include "submitter/sweep/sweep_selection.h"
#include "submitter/sweep/sweep_submit.h"
#include "submitter/sweep/sweep_task.h"

namespace ix {
namespace po = boost::program_options;
namespace {

volatile sig_atomic_t g_interrupted = 0;
void OnInterrupt(int) { g_interrupted = 1; }

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string NewSweepId() {
  char when[32];
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  std::strftime(when, sizeof when, "%Y%m%d-%H%M%S", &tm);
  std::random_device rd;
  char tail[8];
  std::snprintf(tail, sizeof tail, "%04x", static_cast<unsigned>(rd() & 0xffff));
  return std::string("sw-") + when + "-" + tail;
}

std::string SelfPath() {
  std::error_code ec;
  const auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("ixsubmit") : p.string();
}

std::string Counts(const EntryCounts& c) {
  return "pending " + std::to_string(c.pending) + ", running " + std::to_string(c.running) + ", done " +
         std::to_string(c.succeeded) + ", failed " + std::to_string(c.failed) + ", cancelled " +
         std::to_string(c.cancelled + c.skipped);
}

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

std::string Duration(double s) {
  char buf[32];
  const long v = static_cast<long>(s);
  if (v >= 3600) std::snprintf(buf, sizeof buf, "%ldh%02ldm", v / 3600, v / 60 % 60);
  else if (v >= 60) std::snprintf(buf, sizeof buf, "%ldm%02lds", v / 60, v % 60);
  else std::snprintf(buf, sizeof buf, "%lds", v);
  return buf;
}

// What one look at Slurm and the result directories says of an entry not
// yet final; nullopt when nothing changed. `missing` counts the polls an
// entry's task was absent from the queue.
std::optional<EntryUpdate> Observe(const EntryRecord& e, const SweepManifest& m,
                                   const std::map<std::string, QueueTask>& queue, std::map<int64_t, int>& missing) {
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
  if (it == queue.end()) {
    // Gone from the queue without a result: slurmctld forgot it, or the
    // task died before writing status.json.
    if (++missing[e.index] < 6) return std::nullopt;
    u.state = st ? EntryState::kFailed : EntryState::kCancelled;
    u.failure_reason = "the job left the queue without a result";
    u.ended_at = Now();
    return u;
  }
  missing.erase(e.index);
  const SlurmState s = it->second.state;
  if (s == SlurmState::kPending) {
    if (e.state == EntryState::kPending) return std::nullopt;
    u.state = EntryState::kPending;
  } else if (!Final(s)) {
    if (e.state == EntryState::kRunning) return std::nullopt;
    u.state = EntryState::kRunning;
    u.started_at = st ? st->started : Now();
  } else if (s == SlurmState::kCompleted) {
    return std::nullopt;  // its status.json is about to say how it went
  } else if (s == SlurmState::kCancelled) {
    u.state = EntryState::kCancelled;
    u.ended_at = Now();
  } else {
    u.state = EntryState::kFailed;
    u.failure_reason = "Slurm ended the job: " + it->second.state_name;
    u.ended_at = Now();
  }
  return u;
}

// Per job key: the counts, the first failed entry, the first start and the
// time its successful entries took.
struct JobProgress {
  EntryCounts counts;
  std::optional<int64_t> first_failed;
  std::optional<double> first_start;
  double done_seconds = 0;
};
std::map<std::string, JobProgress> Progress(const LoadedSweep& l) {
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

// The canary and fail-fast rules: the jobs to cancel now, with why. A
// failure stops every array of its bucket (a bucket larger than
// MaxArraySize has several).
std::vector<std::pair<const JobRecord*, std::string>> JobsToCancel(const LoadedSweep& l, const SweepManifest& m,
                                                                   std::map<std::string, JobProgress>& progress) {
  const EntryCounts& canary = progress["canary"].counts;
  const bool canary_failed = canary.failed + canary.cancelled > 0;
  std::map<std::string, int64_t> bucket_failed;  // bucket -> its first failed entry
  for (const JobRecord& j : l.jobs) {
    const std::optional<int64_t>& f = progress[j.key].first_failed;
    const std::string b = BucketOfJobKey(j.key);
    if (f && (!bucket_failed.count(b) || *f < bucket_failed[b])) bucket_failed[b] = *f;
  }
  std::vector<std::pair<const JobRecord*, std::string>> out;
  for (const JobRecord& j : l.jobs) {
    const JobProgress& p = progress[j.key];
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

std::string ProgressLine(const JobRecord& j, const JobProgress& p) {
  const EntryCounts& c = p.counts;
  std::string eta;
  if (c.succeeded > 0 && c.pending + c.running > 0) {
    const double per = p.done_seconds / static_cast<double>(c.succeeded);
    const int64_t parallel = std::max<int64_t>(1, std::min<int64_t>(c.running, std::max<int64_t>(j.throttle, 1)));
    eta = ", ETA " + Duration(per * static_cast<double>(c.pending + c.running) / static_cast<double>(parallel));
  }
  const std::string elapsed = p.first_start ? Duration(Now() - *p.first_start) : "-";
  return j.key + (j.slurm_job_id ? " (job " + std::to_string(*j.slurm_job_id) + ")" : "") + " " + Bar(c, 20) + " " +
         Counts(c) + ", elapsed " + elapsed + eta;
}

// Ctrl-C: on a terminal, ask whether to cancel the sweep; otherwise (or on
// "l") leave it running. Returns the exit status.
int OnCtrlC(SweepStore& store, const std::string& id, const LoadedSweep& l, SlurmCli& cli) {
  std::string answer;
  if (::isatty(STDIN_FILENO)) {
    std::printf("\nCancel sweep %s (c) or leave it running and stop watching (l)? [c/L] ", id.c_str());
    std::fflush(stdout);
    std::getline(std::cin, answer);
  }
  if (answer != "c" && answer != "C") {
    std::printf("sweep %s left running; watch again with: ixsubmit sweep --resume %s\n", id.c_str(), id.c_str());
    return 130;
  }
  for (const JobRecord& j : l.jobs) {
    if (j.slurm_job_id && j.state != JobState::kCancelled) {
      (void)cli.Cancel({std::to_string(*j.slurm_job_id)});
      (void)store.MarkJobCancelled(id, j.key, "cancelled by the user (Ctrl-C)");
    }
  }
  (void)store.SetSweepState(id, SweepState::kCancelled);
  std::printf("sweep %s cancelled\n", id.c_str());
  return 130;
}

// Reads Slurm and the result directories into the store, applies the
// canary and fail-fast rules, shows progress, until every entry is final.
int Watch(SweepStore& store, const std::string& id, const SweepManifest& m, SlurmCli& cli) {
  const bool tty = ::isatty(STDOUT_FILENO);
  std::map<std::string, std::string> last_line;
  std::map<int64_t, int> missing;
  int drawn = 0;
  const double t0 = Now();
  for (;;) {
    Result<LoadedSweep> l = store.LoadSweep(id);
    if (!l) return std::cerr << "ixsubmit sweep: " << l.error().message << "\n", 1;
    std::vector<int64_t> ids;
    for (const JobRecord& j : l.value().jobs) {
      if (j.slurm_job_id) ids.push_back(*j.slurm_job_id);
    }
    std::map<std::string, QueueTask> queue;
    if (!ids.empty()) {
      if (Result<std::vector<QueueTask>> q = cli.Queue(ids); q) {
        for (const QueueTask& t : q.value()) queue[t.id.ToString()] = t;
      }
    }
    // Pending tasks whose dependency can never be met are cancelled now, not left behind.
    for (const auto& [task, q] : queue) {
      if (q.reason.find("DependencyNeverSatisfied") != std::string::npos) (void)cli.Cancel({task});
    }
    std::vector<EntryUpdate> updates;
    for (const EntryRecord& e : l.value().entries) {
      if (IsFinal(e.state) || e.slurm_task_id.empty()) continue;
      if (std::optional<EntryUpdate> u = Observe(e, m, queue, missing)) updates.push_back(*u);
    }
    bool changed = false;
    if (!updates.empty()) {
      Result<int64_t> n = store.UpdateEntryStates(id, updates, FinalEntries::kKeep);
      if (!n) std::cerr << "ixsubmit sweep: " << n.error().message << "\n";
      changed = true;
    }
    if (changed) l = store.LoadSweep(id);
    if (!l) return 1;
    std::map<std::string, JobProgress> progress = Progress(l.value());
    const auto cancel = JobsToCancel(l.value(), m, progress);
    for (const auto& [job, why] : cancel) {
      (void)cli.Cancel({std::to_string(*job->slurm_job_id)});
      (void)store.MarkJobCancelled(id, job->key, why);
      std::printf("sweep %s: cancelled %s (job %lld): %s\n", id.c_str(), job->key.c_str(),
                  static_cast<long long>(*job->slurm_job_id), why.c_str());
    }
    if (!cancel.empty()) {
      l = store.LoadSweep(id);
      if (!l) return 1;
      progress = Progress(l.value());
    }
    EntryCounts all;
    for (const EntryRecord& e : l.value().entries) Tally(all, e.state);
    if (tty) {
      if (drawn) std::printf("\x1b[%dA", drawn);
      for (const JobRecord& j : l.value().jobs) std::printf("\x1b[2K%s\n", ProgressLine(j, progress[j.key]).c_str());
      drawn = static_cast<int>(l.value().jobs.size());
    } else {
      for (const JobRecord& j : l.value().jobs) {
        const std::string state = Counts(progress[j.key].counts);
        if (last_line[j.key] != state) std::printf("sweep %s: %s: %s\n", id.c_str(), j.key.c_str(), state.c_str());
        last_line[j.key] = state;
      }
    }
    std::fflush(stdout);
    if (all.pending + all.running == 0) {
      const bool ok = all.failed + all.cancelled + all.skipped == 0;
      (void)store.SetSweepState(id, ok ? SweepState::kSucceeded : all.failed ? SweepState::kFailed : SweepState::kCancelled);
      std::printf("sweep %s %s after %s: %s. Results: %s/results; ixsubmit status %s\n", id.c_str(),
                  ok ? "succeeded" : "failed", Duration(Now() - t0).c_str(), Counts(all).c_str(), m.sweep_dir.c_str(),
                  id.c_str());
      return ok ? 0 : 1;
    }
    for (int i = 0; i < 5 && !g_interrupted; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (g_interrupted) {
      g_interrupted = 0;
      return OnCtrlC(store, id, l.value(), cli);
    }
  }
}

const char kUsage[] =
    "Usage: ixsubmit sweep MODE --config-files FILE... [--config-keys KEY... | FILTERS] [OPTIONS] -- CLIENT...\n"
    "       ixsubmit sweep --resume SWEEP_ID [--db PATH]\n"
    "\n"
    "Run an InferenceX sweep on this Slurm cluster: the canary (where MODE has one) as\n"
    "its own job, then one `sbatch --array=0-N%T` per bucket depending on it; every\n"
    "task runs `srun --inferencex-recipe=R --inferencex-arm=A --inferencex-conc=C CLIENT...`,\n"
    "in the config row's image under Pyxis (--container-image, the model and result\n"
    "directories mounted) unless --no-container.\n"
    "MODE: sweep-enabled, full-sweep-enabled, full-sweep-fail-fast,\n"
    "full-sweep-fail-fast-no-canary, non-canary-full-sweep-enabled.\n"
    "With --config-keys the selection is test-config's, otherwise full-sweep's filters.\n"
    "\n"
    "Safety: one submitter per sweep (flock on SWEEP_DIR/submitter.lock; a second fails\n"
    "naming the holder's pid and host); a --sweep-dir of another sweep not yet finished\n"
    "is refused, a finished one's results/ and logs/ move to results.ID/ and logs.ID/;\n"
    "an sbatch that timed out is looked up by job name before anything is resubmitted.\n"
    "--db default: $XDG_STATE_HOME/inferencex/ix.db (~/.local/state/...), or an existing\n"
    "~/.local/share/inferencex/ix.db; keep it on a local disk (a warning names NFS and\n"
    "other network file systems: SQLite's WAL is unsafe there across hosts).\n";

const char kContainerHelp[] =
    "\nContainers (Pyxis; kept in sweep.json, so --resume uses the same):\n"
    "  --squash-dir DIR  the site's squash files (default $IX_SQUASH_DIR): an image's step uses\n"
    "                    DIR/<image with / : @ # as _>.sqsh when it exists, else the image itself\n"
    "                    (Pyxis imports it); `ixsubmit images import` fills DIR\n"
    "  --model-dir DIR   host directory of the model checkpoints, mounted at the same path\n"
    "                    (default $IX_MODEL_DIR, else the recipe's MODEL_PATH); must hold MODEL_PATH\n"
    "  --no-container    run the steps on the hosts, without the rows' images (a cluster without\n"
    "                    Pyxis, such as the local test cluster)\n";

}  // namespace

Result<SweepStore> OpenSweepStore(const std::optional<std::string>& db) {
  Result<DbPathChoice> choice = ChooseDbPath(db, CurrentEnvironment(), PathExistsOnDisk);
  if (!choice) return choice.error();
  const std::string path = choice.value().path;
  if (!choice.value().note.empty()) std::fprintf(stderr, "ixsubmit: note: %s\n", choice.value().note.c_str());
  // WAL across hosts on a network file system can corrupt the database; said, not refused (one host is safe).
  if (std::optional<std::string> fs = NetworkFsOf(path)) {
    std::fprintf(stderr, "ixsubmit: warning: the sweep database %s is on %s; SQLite's WAL is unsafe there when "
                 "used from more than one host: use a local disk (--db PATH)\n", path.c_str(), fs->c_str());
  }
  std::error_code ec;
  const auto parent = std::filesystem::path(path).parent_path();
  // A directory made here is private (0700); an existing one is left as it is.
  if (!parent.empty() && !std::filesystem::exists(parent, ec)) {
    std::filesystem::create_directories(parent, ec);
    std::filesystem::permissions(parent, std::filesystem::perms::owner_all, std::filesystem::perm_options::replace, ec);
  }
  return SweepStore::Open(path);
}

int RunSweepCommand(const std::vector<std::string>& all_args) {
  const std::string me = "ixsubmit sweep";
  // Line by line even into a file or pipe: a submitter killed mid-sweep
  // leaves every line it printed (the sweep id first) for --resume.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  std::vector<std::string> args, client;
  bool after = false;
  for (const std::string& a : all_args) {
    if (!after && a == "--") {
      after = true;
      continue;
    }
    (after ? client : args).push_back(a);
  }
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    po::options_description o = MatrixOptions(true, false);
    (args.empty() ? std::cerr : std::cout) << kUsage << "\nSelection (as ixsubmit matrix full-sweep; "
                                           << "--config-keys/--conc as test-config):\n" << o
                                           << "\nSweep options:\n  --recipe-dir DIR  --sweep-dir DIR  --db PATH  "
                                              "--dry-run  --partition P  --account A  --time T  --exclusive  "
                                              "--throttle N (default 4)  --no-watch  --resume SWEEP_ID\n"
                                           << kContainerHelp;
    return args.empty() ? 2 : 0;
  }
  // Sweep options come off first; the rest is the matrix selection.
  std::optional<std::string> recipe_dir, sweep_dir, db, resume, squash_dir, model_dir;
  SubmitSettings settings;
  bool dry_run = false, watch = true, no_container = false;
  std::vector<std::string> selection, other_options;
  std::string mode_name;
  try {
    for (size_t i = 0; i < args.size(); ++i) {
      const std::string a = args[i];
      auto value = [&]() { return TakeValue(args, i); };
      const std::string name = a.substr(0, a.find('='));
      if (name != "--db" && name != "--resume") other_options.push_back(name);
      if (name == "--recipe-dir") recipe_dir = value();
      else if (name == "--sweep-dir") sweep_dir = value();
      else if (name == "--db") db = value();
      else if (name == "--resume") resume = value();
      else if (name == "--partition") settings.partition = value();
      else if (name == "--account") settings.account = value();
      else if (name == "--time") settings.time_limit = value();
      else if (name == "--throttle") settings.throttle = ParseInt("throttle", value());
      else if (name == "--squash-dir") squash_dir = value();
      else if (name == "--model-dir") model_dir = value();
      else if (a == "--no-container") no_container = true;
      else if (a == "--exclusive") settings.exclusive = true;
      else if (a == "--dry-run") dry_run = true;
      else if (a == "--no-watch") watch = false;
      else if (mode_name.empty() && !a.empty() && a[0] != '-') mode_name = a;
      else selection.push_back(a);
    }
    if (settings.throttle < 0) throw Misuse{"argument --throttle: must be >= 0"};
    if (resume && (!other_options.empty() || !client.empty() || !mode_name.empty())) {
      throw Misuse{"argument --resume: takes only --db (the sweep keeps the mode, selection, sbatch and container "
                   "settings and client it was submitted with); got " + (!other_options.empty() ? other_options[0] : !mode_name.empty() ? mode_name : std::string("a client"))};
    }
  } catch (const Misuse& m) {
    std::cerr << me << ": error: " << m.message << "\nTry '" << me << " --help'.\n";
    return 2;
  }
  RealSlurmCli cli(CurrentEnvironment());
  struct sigaction sa{};
  sa.sa_handler = OnInterrupt;
  sigaction(SIGINT, &sa, nullptr);

  if (resume) {
    Result<SweepStore> store = OpenSweepStore(db);
    if (!store) return std::cerr << me << ": " << store.error().message << "\n", 1;
    Result<LoadedSweep> l = store.value().LoadSweep(*resume);
    if (!l) return std::cerr << me << ": " << l.error().message << "\n", 1;
    Result<SweepManifest> m = ReadSweepManifest(l.value().sweep.sweep_dir);
    if (!m) return std::cerr << me << ": " << m.error().message << "\n", 1;
    Result<SweepLock> lock = LockSweepDir(m.value().sweep_dir, *resume);
    if (!lock) return std::cerr << me << ": " << lock.error().message << "\n", 1;
    std::printf("sweep %s: resuming (%s)\n", resume->c_str(), m.value().sweep_dir.c_str());
    if (Status s = SubmitPending(store.value(), *resume, m.value(), cli); !s) {
      return std::cerr << me << ": " << s.error().message << "\n", 1;
    }
    return Watch(store.value(), *resume, m.value(), cli);
  }

  Result<SweepMode> mode = ParseSweepMode(mode_name);
  if (!mode) return std::cerr << me << ": error: " << mode.error().message << "\n", 2;
  SweepSelection sel;
  try {
    sel = ParseSweepSelection(selection);
    if (no_container && (squash_dir || model_dir)) {
      throw Misuse{std::string("argument ") + (squash_dir ? "--squash-dir" : "--model-dir") +
                   ": not with --no-container (the steps run on the hosts)"};
    }
  } catch (const Misuse& m) {
    std::cerr << me << ": error: " << m.message << "\nTry '" << me << " --help'.\n";
    return 2;
  }
  if (client.empty()) {
    std::cerr << me << ": error: no benchmark client: give its command after --, e.g. -- aiperf profile ...\n";
    return 2;
  }
  Result<MasterConfig> config = LoadMasterConfigFiles(sel.config_files);
  if (!config) return std::cerr << me << ": " << config.error().message << "\n", 1;
  const SweepModeTraits traits = TraitsOf(mode.value());
  Result<MatrixBuckets> buckets = SelectEntries(sel, config.value(), traits.trim_conc);
  if (!buckets) return std::cerr << me << ": " << buckets.error().message << "\n", 1;
  Result<ContainerSettings> container = ResolveContainerSettings(no_container, squash_dir, model_dir);
  if (!container) return std::cerr << me << ": error: " << container.error().message << "\n", 2;
  const std::string rdir = ResolveRecipeDir(recipe_dir.value_or(""));
  Result<SweepPlan> plan = PlanSweep(mode.value(), buckets.value(), rdir, MaxArraySize(CurrentEnvironment()));
  if (!plan) return std::cerr << me << ": " << plan.error().message << "\n", 1;

  SweepManifest m;
  m.sweep_id = NewSweepId();
  std::error_code ec;
  m.sweep_dir = std::filesystem::absolute(sweep_dir.value_or("ix-sweep-" + m.sweep_id), ec).lexically_normal().string();
  m.ixsubmit = SelfPath();
  m.recipe_dir = rdir;
  m.fail_fast = traits.fail_fast;
  m.client = client;
  m.settings = settings;
  m.container = container.value();
  m.plan = plan.value();
  if (m.container.enabled) {
    if (Status s = CheckSweepContainers(m, config.value()); !s) return std::cerr << me << ": " << s.error().message << "\n", 1;
  }
  m.dry_run = dry_run;
  // One submitter per sweep, one live sweep per directory: the lock first,
  // then the directory's earlier sweep is checked, then sweep.json written.
  std::filesystem::create_directories(m.sweep_dir, ec);
  if (ec) return std::cerr << me << ": cannot create " << m.sweep_dir << ": " << ec.message() << "\n", 1;
  Result<SweepLock> lock = LockSweepDir(m.sweep_dir, m.sweep_id);
  if (!lock) return std::cerr << me << ": " << lock.error().message << "\n", 1;
  Result<SweepStore> store = OpenSweepStore(db);
  if (!store) return std::cerr << me << ": " << store.error().message << "\n", 1;
  const auto state_of = [&](const std::string& other) -> std::optional<SweepState> {
    Result<LoadedSweep> o = store.value().LoadSweep(other);
    return o ? std::optional<SweepState>(o.value().sweep.state) : std::nullopt;
  };
  const auto in_slurm = [&](const std::string& name) -> Result<bool> {
    Result<std::vector<int64_t>> found = cli.FindJobsByName(name);
    if (!found) return found.error();
    return !found.value().empty();
  };
  if (Status s = ClaimSweepDir(m.sweep_dir, m.sweep_id, state_of, in_slurm); !s) {
    return std::cerr << me << ": " << s.error().message << "\n", 1;
  }
  if (Status s = WriteSweepFiles(m); !s) return std::cerr << me << ": " << s.error().message << "\n", 1;
  for (const std::string& line : DescribeImages(m, PathExistsOnDisk)) std::printf("sweep: %s\n", line.c_str());

  if (dry_run) {
    for (const PlannedJob& j : m.plan.jobs) {
      std::string line = "sbatch --parsable";
      for (const std::string& a : SbatchArgs(m, j, settings, j.depends_on.empty() ? 0 : -1)) line += " " + a;
      std::printf("# %s: %zu entries\n%s %s\n", j.key.c_str(), j.entries.size(), line.c_str(), ScriptPath(m, j).c_str());
      int err = 0;
      std::printf("%s", ReadFileText(ScriptPath(m, j), &err).c_str());
      std::string step;
      for (const std::string& a : StepSrunArgv(m, m.plan.entries[static_cast<size_t>(j.entries[0])], PathExistsOnDisk)) {
        step += (step.empty() ? "" : " ") + a;
      }
      std::printf("# its entry %lld runs: %s\n\n", static_cast<long long>(j.entries[0]), step.c_str());
    }
    std::printf("dry run: nothing submitted; the sweep files are in %s\n", m.sweep_dir.c_str());
    return 0;
  }
  // Without Pyxis srun would refuse --container-image in every task, an
  // hour into the sweep; `srun --help` says so now (~20 ms).
  if (m.container.enabled) {
    if (Status s = CheckSrunHasPyxis(CurrentEnvironment()); !s) {
      return std::cerr << me << ": " << s.error().message << "; nothing was submitted\n", 1;
    }
  }
  // sbatch checks partition, account, time and GRES before anything is
  // submitted: a rejection stops the sweep with nothing in the queue.
  {
    std::vector<std::string> argv = {"sbatch", "--test-only"};
    for (const std::string& a : SbatchArgs(m, m.plan.jobs[0], settings, 0)) argv.push_back(a);
    argv.push_back(ScriptPath(m, m.plan.jobs[0]));
    Result<CommandOutput> r = RunCommand(argv, CurrentEnvironment());
    if (!r) return std::cerr << me << ": " << r.error().message << "\n", 1;
    if (!r.value().ok()) {
      std::cerr << me << ": sbatch rejects the sweep's jobs; nothing was submitted:\n" << r.value().err;
      return 1;
    }
  }
  NewSweep ns;
  ns.id = m.sweep_id;
  ns.mode = mode.value();
  ns.sweep_dir = m.sweep_dir;
  ns.argv = all_args;
  for (const PlannedJob& j : m.plan.jobs) {
    NewJob nj;
    nj.key = j.key;
    nj.kind = j.canary ? JobKind::kCanary : JobKind::kArray;
    nj.job_name = JobName(m, j);
    nj.script_path = ScriptPath(m, j);
    nj.array_size = static_cast<int64_t>(j.entries.size());
    nj.throttle = settings.throttle;
    nj.depends_on = j.depends_on;
    ns.jobs.push_back(nj);
  }
  for (const PlannedEntry& e : m.plan.entries) {
    NewEntry ne;
    ne.index = e.index;
    ne.job_key = e.job_key;
    if (e.job_key != "canary") ne.array_index = e.array_index;
    ne.bucket = e.bucket;
    ne.config_key = e.config_key;
    ne.arm = e.arm;
    ne.recipe = e.recipe;
    ne.conc = e.conc;
    ne.entry_json = e.entry_json;
    ns.entries.push_back(ne);
  }
  Result<std::string> id = store.value().CreateSweep(ns);
  if (!id) return std::cerr << me << ": " << id.error().message << "\n", 1;
  std::printf("sweep %s: %s, %zu entries in %zu jobs, files in %s\n", id.value().c_str(), SweepModeName(mode.value()),
              m.plan.entries.size(), m.plan.jobs.size(), m.sweep_dir.c_str());
  if (Status s = SubmitPending(store.value(), id.value(), m, cli); !s) {
    std::cerr << me << ": " << s.error().message << "\n";
    return 1;
  }
  (void)store.value().SetSweepState(id.value(), SweepState::kRunning);
  if (!watch) {
    std::printf("sweep %s submitted; watch it with: ixsubmit sweep --resume %s\n", id.value().c_str(), id.value().c_str());
    return 0;
  }
  return Watch(store.value(), id.value(), m, cli);
}

}  // namespace ix
