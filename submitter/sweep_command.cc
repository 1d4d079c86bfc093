#include "submitter/sweep_command.h"

#include <signal.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "core/base/file_text.h"
#include "core/process/process.h"
#include "core/recipe/recipe_dir.h"
#include "submitter/matrix_options.h"
#include "submitter/results/benchmark_env.h"
#include "submitter/sweep/entry_client.h"
#include "submitter/sweep/slurm_cli.h"
#include "submitter/sweep/stream_options.h"
#include "submitter/sweep/sweep_collector.h"
#include "submitter/sweep/sweep_container.h"
#include "submitter/sweep/sweep_db.h"
#include "submitter/sweep/sweep_dir.h"
#include "submitter/sweep/sweep_driver.h"
#include "submitter/sweep/sweep_files.h"
#include "submitter/sweep/sweep_id.h"
#include "submitter/sweep/sweep_plan.h"
#include "submitter/sweep/sweep_selection.h"
#include "submitter/sweep/sweep_store.h"
#include "submitter/sweep/sweep_token.h"

namespace ix {
namespace po = boost::program_options;
namespace {

const char kMe[] = "ixsubmit sweep";

const char kUsage[] =
    "Usage: ixsubmit sweep MODE --config-files FILE... [--config-keys KEY... | FILTERS] [OPTIONS] [-- CLIENT...]\n"
    "       ixsubmit sweep --resume SWEEP_ID [--db PATH]\n"
    "\n"
    "Run an InferenceX sweep on this Slurm cluster: the canary (where MODE has one) as\n"
    "its own job, then one `sbatch --array=0-N%T` per bucket depending on it; every\n"
    "task runs `srun --inferencex-recipe=R --inferencex-arm=A --inferencex-conc=C CLIENT...`,\n"
    "in the config row's image under Pyxis (--container-image, the model and result\n"
    "directories mounted) unless --no-container.\n"
    "Without CLIENT each entry runs InferenceX's own client for its scenario: agentic-coding\n"
    "entries AIPerf's AgentX replay (the image's aiperf, or $AIPERF_CLI) as build_replay_cmd\n"
    "builds it, fixed-seq-len entries benchmark_serving.py as run_benchmark_serving builds it;\n"
    "--dry-run shows every entry's command.\n"
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

const char kClientHelp[] =
    "\nClients (without CLIENT; kept in sweep.json):\n"
    "  --bench-serving-dir DIR  the InferenceX checkout the fixed-seq-len client runs\n"
    "                    utils/bench_serving/benchmark_serving.py from, as the step sees it (default\n"
    "                    /workspace, where InferenceX's launchers mount it)\n"
    "  --duration SECONDS  agentic entries' DURATION, AIPerf's profiling window (default: the matrix\n"
    "                    entry's, 3600); under 900 AIPerf's unsafe override is on, as in InferenceX's\n"
    "                    smoke runs\n"
    "  --hang-after SECONDS|off  every step's hang_after (srun --inferencex-hang-after; default: the\n"
    "                    recipe's hang.after): a hung entry fails with reason hang\n";

const char kStreamHelp[] =
    "\nStream (node agents -> the sweep's collector; kept in sweep.json, so --resume uses the same):\n"
    "  --collector-listen ADDR:PORT  where the sweep's collector listens while ixsubmit submits and\n"
    "                    watches (default 0.0.0.0:0: every interface, a free port chosen at submit and\n"
    "                    kept in sweep.json, so --resume listens on the same)\n"
    "  --collector-url URL  what the jobs tell their node agent (default http://HOSTNAME:PORT, this host)\n"
    "  --no-collector    no collector: the jobs report nothing to one; Slurm and the shared sweep\n"
    "                    directory only, as before\n"
    "  --node-results DIR  each entry's step writes its results on the node, in DIR/SWEEP_ID/INDEX\n"
    "                    (absolute); they reach SWEEP_DIR/results/INDEX only through the collector\n"
    "  --agent-socket PATH  the node agent's socket on the nodes (default /run/inferencex/agent.sock)\n"
    "The collector's token is made at submit, in SWEEP_DIR/collector.token (0600); the jobs hand that\n"
    "file to their node agent.\n";

// The command line of `ixsubmit sweep`: the sweep's own options, the rest
// (the matrix selection) and the client after "--". Invariant, once
// parsed: with `resume`, nothing but --db was given.
struct SweepCommandLine {
  std::vector<std::string> all;  // as given; stored with the sweep
  std::vector<std::string> args, client;
  std::optional<std::string> recipe_dir, sweep_dir, db, resume, squash_dir, model_dir;
  ClientDefaults client_defaults;
  SubmitSettings settings;
  StreamOptions stream;
  std::string hang_after;  // --hang-after: seconds or "off"; "" = the recipe's
  bool dry_run = false, watch = true, no_container = false;
  std::vector<std::string> selection;
  std::vector<std::string> other_options;  // every option but --db and --resume, for the --resume check
  std::string mode_name;
};

// A new sweep as planned, before anything is written or submitted.
struct PlannedSweep {
  SweepMode mode = SweepMode::kFullSweepEnabled;
  SweepManifest m;
};

// The sweep's collector while this submitter runs, and the inbox it feeds
// the driver. Invariant: the collector (declared after the inbox) stops
// before the inbox goes.
struct SweepStreamRun {
  SweepInbox inbox;
  std::unique_ptr<SweepCollector> collector;
  SweepInbox* Inbox() { return collector ? &inbox : nullptr; }
};

int Failed(const std::string& message) {
  std::cerr << kMe << ": " << message << "\n";
  return 1;
}

int Misused(const std::string& message) {
  std::cerr << kMe << ": error: " << message << "\nTry '" << kMe << " --help'.\n";
  return 2;
}

std::string SelfPath() {
  std::error_code ec;
  const auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("ixsubmit") : p.string();
}

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void ShowHelp(std::ostream& out) {
  po::options_description o = MatrixOptions(true, false);
  out << kUsage << "\nSelection (as ixsubmit matrix full-sweep; --config-keys/--conc as test-config):\n" << o
      << "\nSweep options:\n  --recipe-dir DIR  --sweep-dir DIR  --db PATH  --dry-run  --partition P  --account A  "
         "--time T  --exclusive  --throttle N (default 4)  --no-watch  --resume SWEEP_ID\n"
      << kContainerHelp << kClientHelp << kStreamHelp;
}

// --hang-after as srun's --inferencex-hang-after takes it. Throws Misuse.
std::string ParseHangAfter(const std::string& text) {
  if (text == "off") return text;
  const int64_t s = ParseInt("hang-after", text);
  if (s < 1 || s > 86400) throw Misuse{"argument --hang-after: expected a number of seconds from 1 to 86400, or off"};
  return std::to_string(s);
}

// The sweep's own options come off first; the rest is the matrix selection
// and the mode. Throws Misuse.
void ParseSweepOptions(SweepCommandLine& c) {
  const std::vector<std::string>& args = c.args;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string a = args[i];
    auto value = [&]() { return TakeValue(args, i); };
    const std::string name = a.substr(0, a.find('='));
    if (name != "--db" && name != "--resume") c.other_options.push_back(name);
    if (name == "--recipe-dir") c.recipe_dir = value();
    else if (name == "--sweep-dir") c.sweep_dir = value();
    else if (name == "--db") c.db = value();
    else if (name == "--resume") c.resume = value();
    else if (name == "--partition") c.settings.partition = value();
    else if (name == "--account") c.settings.account = value();
    else if (name == "--time") c.settings.time_limit = value();
    else if (name == "--throttle") c.settings.throttle = ParseInt("throttle", value());
    else if (name == "--squash-dir") c.squash_dir = value();
    else if (name == "--model-dir") c.model_dir = value();
    else if (name == "--bench-serving-dir") c.client_defaults.bench_serving_dir = value();
    else if (name == "--hang-after") c.hang_after = ParseHangAfter(value());
    else if (name == "--duration") {
      c.client_defaults.duration = ParseInt("duration", value());
      if (c.client_defaults.duration < 1) throw Misuse{"argument --duration: must be a number of seconds >= 1"};
    }
    else if (a == "--no-container") c.no_container = true;
    else if (a == "--exclusive") c.settings.exclusive = true;
    else if (a == "--dry-run") c.dry_run = true;
    else if (a == "--no-watch") c.watch = false;
    else if (TakeStreamOption(a, value, c.stream)) continue;
    else if (c.mode_name.empty() && !a.empty() && a[0] != '-') c.mode_name = a;
    else c.selection.push_back(a);
  }
  if (c.settings.throttle < 0) throw Misuse{"argument --throttle: must be >= 0"};
  if (c.client_defaults.bench_serving_dir.empty() || c.client_defaults.bench_serving_dir[0] != '/') {
    throw Misuse{"argument --bench-serving-dir: must be an absolute path, got '" +
                 c.client_defaults.bench_serving_dir + "'"};
  }
  if (Status s = CheckStreamOptions(c.stream); !s) throw Misuse{s.error().message};
  if (c.resume && (!c.other_options.empty() || !c.client.empty() || !c.mode_name.empty())) {
    const std::string got = !c.other_options.empty() ? c.other_options[0]
                            : !c.mode_name.empty()   ? c.mode_name
                                                     : std::string("a client");
    throw Misuse{"argument --resume: takes only --db (the sweep keeps the mode, selection, sbatch and container "
                 "settings and client it was submitted with, and its stream settings); got " + got};
  }
}

// Splits the arguments at "--" and parses them; the exit status when the
// command is done (help or misuse), nullopt to go on.
std::optional<int> ParseCommandLine(const std::vector<std::string>& all, SweepCommandLine& c) {
  c.all = all;
  bool after = false;
  for (const std::string& a : all) {
    if (!after && a == "--") {
      after = true;
      continue;
    }
    (after ? c.client : c.args).push_back(a);
  }
  if (c.args.empty() || c.args[0] == "--help" || c.args[0] == "-h") {
    ShowHelp(c.args.empty() ? std::cerr : std::cout);
    return c.args.empty() ? 2 : 0;
  }
  try {
    ParseSweepOptions(c);
  } catch (const Misuse& m) {
    return Misused(m.message);
  }
  return std::nullopt;
}

void SayCollector(const SweepManifest& m, const ListenAddress& at) {
  std::printf("sweep %s: collector on %s (jobs report to %s)\n", m.sweep_id.c_str(), at.ToString().c_str(),
              m.stream.collector_url.c_str());
}

// A resumed sweep's collector, where its jobs were told to report, with its
// token. Without it the watch goes on through Slurm only, unless the
// results come only through it (--node-results). The exit status when it
// cannot go on.
std::optional<int> ResumeStream(const SweepManifest& m, const std::string& db_path, SweepStreamRun& run) {
  if (m.stream.collector_url.empty()) return std::nullopt;  // --no-collector, or a sweep from before the stream
  Result<std::string> token = ReadSweepToken(m.stream.token_file);
  if (!token) return Failed(token.error().message);
  Result<ListenAddress> at = ParseListenAddress(m.stream.collector_listen, m.sweep_dir + "/sweep.json: stream.collector_listen");
  Result<std::unique_ptr<SweepCollector>> sc =
      at ? SweepCollector::Start(m, at.value(), db_path, token.value(), run.inbox)
         : Result<std::unique_ptr<SweepCollector>>(at.error());
  if (!sc) {
    if (!m.stream.node_result_dir.empty()) {
      return Failed(sc.error().message + "; the results of this sweep (--node-results) reach " + m.sweep_dir +
                    "/results only through it");
    }
    std::fprintf(stderr, "ixsubmit sweep: warning: %s; watching through Slurm only (the node agents keep the "
                 "events until a collector takes them)\n", sc.error().message.c_str());
    return std::nullopt;
  }
  run.collector = std::move(sc).value();
  SayCollector(m, run.collector->address());
  return std::nullopt;
}

// --resume: the sweep's own directory and settings, its lock, its
// collector, then the driver submits what is missing and watches.
int ResumeSweep(const SweepCommandLine& c, SlurmCli& cli) {
  const std::string& id = *c.resume;
  Result<SweepStore> store = OpenSweepStore(c.db);
  if (!store) return Failed(store.error().message);
  Result<LoadedSweep> l = store.value().LoadSweep(id);
  if (!l) return Failed(l.error().message);
  Result<SweepManifest> m = ReadSweepManifest(l.value().sweep.sweep_dir);
  if (!m) return Failed(m.error().message);
  Result<SweepLock> lock = LockSweepDir(m.value().sweep_dir, id);
  if (!lock) return Failed(lock.error().message);
  std::printf("sweep %s: resuming (%s)\n", id.c_str(), m.value().sweep_dir.c_str());
  SweepStreamRun run;
  if (auto rc = ResumeStream(m.value(), store.value().path(), run)) return *rc;
  SweepDriver driver(store.value(), cli, id, m.value(), TerminalWatchHooks(run.Inbox()));
  if (Status s = driver.Submit(); !s) return Failed(s.error().message);
  return driver.Watch();
}

// The mode, the selection and the plan, checked before anything is
// written; the exit status when they are not right.
std::optional<int> PlanNewSweep(const SweepCommandLine& c, PlannedSweep& out) {
  Result<SweepMode> mode = ParseSweepMode(c.mode_name);
  if (!mode) return std::cerr << kMe << ": error: " << mode.error().message << "\n", 2;
  SweepSelection sel;
  try {
    sel = ParseSweepSelection(c.selection);
    if (c.no_container && (c.squash_dir || c.model_dir)) {
      throw Misuse{std::string("argument ") + (c.squash_dir ? "--squash-dir" : "--model-dir") +
                   ": not with --no-container (the steps run on the hosts)"};
    }
  } catch (const Misuse& m) {
    return Misused(m.message);
  }
  Result<MasterConfig> config = LoadMasterConfigFiles(sel.config_files);
  if (!config) return Failed(config.error().message);
  const SweepModeTraits traits = TraitsOf(mode.value());
  Result<MatrixBuckets> buckets = SelectEntries(sel, config.value(), traits.trim_conc);
  if (!buckets) return Failed(buckets.error().message);
  Result<ContainerSettings> container = ResolveContainerSettings(c.no_container, c.squash_dir, c.model_dir);
  if (!container) return std::cerr << kMe << ": error: " << container.error().message << "\n", 2;
  const std::string rdir = ResolveRecipeDir(c.recipe_dir.value_or(""));
  Result<SweepPlan> plan = PlanSweep(mode.value(), buckets.value(), rdir, MaxArraySize(CurrentEnvironment()));
  if (!plan) return Failed(plan.error().message);
  if (c.client.empty()) {
    for (const PlannedEntry& e : plan.value().entries) {
      if (!e.eval_only) continue;
      return std::cerr << kMe << ": error: entry " << e.index << " (" << e.config_key << " " << e.arm << " conc "
                       << e.conc << ") is eval-only: InferenceX's evals (lm-eval, SWE-bench) have no command here; "
                       << "give the client after --, or leave evals out with --no-evals\n",
             2;
    }
  }

  out.mode = mode.value();
  SweepManifest& m = out.m;
  m.sweep_id = NewSweepId(Now());
  std::error_code ec;
  m.sweep_dir = std::filesystem::absolute(c.sweep_dir.value_or("ix-sweep-" + m.sweep_id), ec).lexically_normal().string();
  m.ixsubmit = SelfPath();
  m.recipe_dir = rdir;
  m.fail_fast = traits.fail_fast;
  m.client = c.client;
  m.client_defaults = c.client_defaults;
  m.hang_after = c.hang_after;
  m.settings = c.settings;
  m.container = container.value();
  m.stream.agent_socket = c.stream.agent_socket;
  m.stream.node_result_dir = c.stream.node_results;
  m.plan = plan.value();
  if (m.container.enabled) {
    if (Status s = CheckSweepContainers(m, config.value()); !s) return Failed(s.error().message);
  }
  m.dry_run = c.dry_run;
  return std::nullopt;
}

// The new sweep's collector, before sweep.json is written: a new token, the
// port it got kept beside sweep.json, and the URL the jobs are told. The
// exit status when it cannot start.
std::optional<int> StartStream(const SweepCommandLine& c, SweepManifest& m, const std::string& db_path,
                               SweepStreamRun& run) {
  if (c.stream.no_collector) return std::nullopt;
  const ListenAddress listen = ParseListenAddress(c.stream.listen, "--collector-listen").value();  // checked
  if (c.dry_run) {
    std::printf("sweep %s: dry run: no collector started (the sweep's would listen on %s)\n", m.sweep_id.c_str(),
                listen.ToString().c_str());
    return std::nullopt;
  }
  Result<std::string> token = CreateSweepToken(m.sweep_dir);
  if (!token) return Failed(token.error().message);
  Result<std::unique_ptr<SweepCollector>> sc = SweepCollector::Start(m, listen, db_path, token.value(), run.inbox);
  if (!sc) return Failed(sc.error().message + " (--collector-listen ADDR:PORT, or --no-collector)");
  run.collector = std::move(sc).value();
  const ListenAddress at = run.collector->address();
  m.stream.collector_listen = at.ToString();
  m.stream.token_file = SweepTokenPath(m.sweep_dir);
  m.stream.collector_url = CollectorUrlFor(c.stream, ThisHostName(), at.port);
  SayCollector(m, at);
  return std::nullopt;
}

// One submitter per sweep, one live sweep per directory: the lock first,
// then the directory's earlier sweep is checked, then the sweep's collector
// started, then sweep.json and the scripts written. The exit status when
// the directory is not ours or the collector cannot start.
std::optional<int> TakeSweepDir(const SweepCommandLine& c, SweepManifest& m, SlurmCli& cli, SweepLock& lock,
                                std::optional<SweepStore>& store, SweepStreamRun& run) {
  std::error_code ec;
  std::filesystem::create_directories(m.sweep_dir, ec);
  if (ec) return Failed("cannot create " + m.sweep_dir + ": " + ec.message());
  Result<SweepLock> locked = LockSweepDir(m.sweep_dir, m.sweep_id);
  if (!locked) return Failed(locked.error().message);
  lock = std::move(locked).value();
  Result<SweepStore> opened = OpenSweepStore(c.db);
  if (!opened) return Failed(opened.error().message);
  store.emplace(std::move(opened).value());
  const auto state_of = [&](const std::string& other) -> std::optional<SweepState> {
    Result<LoadedSweep> o = store->LoadSweep(other);
    return o ? std::optional<SweepState>(o.value().sweep.state) : std::nullopt;
  };
  const auto in_slurm = [&](const std::string& name) -> Result<bool> {
    Result<std::vector<int64_t>> found = cli.FindJobsByName(name);
    if (!found) return found.error();
    return !found.value().empty();
  };
  if (Status s = ClaimSweepDir(m.sweep_dir, m.sweep_id, state_of, in_slurm); !s) return Failed(s.error().message);
  if (auto rc = StartStream(c, m, store->path(), run)) return *rc;
  if (Status s = WriteSweepFiles(m); !s) return Failed(s.error().message);
  for (const std::string& line : DescribeImages(m, PathExistsOnDisk)) std::printf("sweep: %s\n", line.c_str());
  return std::nullopt;
}

// What entry `index`'s step would run as its client, on a node called NODE.
std::string DryRunClient(const SweepManifest& m, int64_t index) {
  const PlannedEntry& e = m.plan.entries[static_cast<size_t>(index)];
  const std::string rdir = TaskResultDir(m, e.index);
  Result<EnvVars> contract = BenchmarkEnvironment(e, "NODE", ContractOptions{rdir, m.client_defaults.duration});
  if (!contract) return "(" + contract.error().message + ")";
  Result<EntryClient> c = ResolveEntryClient(m, e, contract.value(), rdir, CurrentEnvironment());
  return c ? c.value().description : "(" + c.error().message + ")";
}

// --dry-run: each job's sbatch line and script, what its first entry's
// step runs, and every entry's client.
int PrintDryRun(const SweepManifest& m) {
  for (const PlannedJob& j : m.plan.jobs) {
    std::string line = "sbatch --parsable";
    for (const std::string& a : SbatchArgs(m, j, m.settings, j.depends_on.empty() ? 0 : -1)) line += " " + a;
    std::printf("# %s: %zu entries\n%s %s\n", j.key.c_str(), j.entries.size(), line.c_str(), ScriptPath(m, j).c_str());
    int err = 0;
    std::printf("%s", ReadFileText(ScriptPath(m, j), &err).c_str());
    const PlannedEntry& e = m.plan.entries[static_cast<size_t>(j.entries[0])];
    std::string step;
    for (const std::string& a : StepSrunArgv(m, e, PathExistsOnDisk, {"CLIENT"})) step += (step.empty() ? "" : " ") + a;
    std::printf("# its entry %lld runs: %s\n", static_cast<long long>(e.index), step.c_str());
    for (int64_t i : j.entries) std::printf("#   entry %lld CLIENT: %s\n", static_cast<long long>(i), DryRunClient(m, i).c_str());
    std::printf("\n");
  }
  std::printf("dry run: nothing submitted; the sweep files are in %s\n", m.sweep_dir.c_str());
  return 0;
}

// What would fail every task later is refused before anything is
// submitted: without Pyxis srun would refuse --container-image in every
// task, an hour into the sweep (`srun --help` says so now, ~20 ms); sbatch
// --test-only checks partition, account, time and GRES.
std::optional<int> PreflightChecks(const SweepManifest& m) {
  if (m.container.enabled) {
    if (Status s = CheckSrunHasPyxis(CurrentEnvironment()); !s) {
      return Failed(s.error().message + "; nothing was submitted");
    }
  }
  std::vector<std::string> argv = {"sbatch", "--test-only"};
  for (const std::string& a : SbatchArgs(m, m.plan.jobs[0], m.settings, 0)) argv.push_back(a);
  argv.push_back(ScriptPath(m, m.plan.jobs[0]));
  Result<CommandOutput> r = RunCommand(argv, CurrentEnvironment());
  if (!r) return Failed(r.error().message);
  if (!r.value().ok()) {
    std::cerr << kMe << ": sbatch rejects the sweep's jobs; nothing was submitted:\n" << r.value().err;
    return 1;
  }
  return std::nullopt;
}

// Records the sweep, submits its jobs and, unless --no-watch, watches it.
int SubmitAndWatch(const SweepCommandLine& c, const PlannedSweep& p, SweepStore& store, SlurmCli& cli,
                   SweepStreamRun& run) {
  const SweepManifest& m = p.m;
  Result<std::string> id = store.CreateSweep(SweepRecordOf(m, p.mode, c.all));
  if (!id) return Failed(id.error().message);
  std::printf("sweep %s: %s, %zu entries in %zu jobs, files in %s\n", id.value().c_str(), SweepModeName(p.mode),
              m.plan.entries.size(), m.plan.jobs.size(), m.sweep_dir.c_str());
  SweepDriver driver(store, cli, id.value(), m, TerminalWatchHooks(run.Inbox()));
  if (Status s = driver.Submit(); !s) return Failed(s.error().message);
  (void)store.SetSweepState(id.value(), SweepState::kRunning);
  if (!c.watch) {
    std::printf("sweep %s submitted; watch it with: ixsubmit sweep --resume %s%s\n", id.value().c_str(),
                id.value().c_str(),
                run.collector ? " (which runs its collector again; until then the node agents keep what the jobs "
                                "report)"
                              : "");
    return 0;
  }
  return driver.Watch();
}

// What the selection held that the sweep does not run (sweep.json keeps
// the same list under "skipped"): said before anything is submitted.
void PrintSkipped(const SweepPlan& plan) {
  for (const SkippedEntry& s : plan.skipped) std::printf("sweep: skipped %s\n", s.Describe().c_str());
  if (!plan.skipped.empty()) {
    std::printf("sweep: %zu skipped (not submitted; kept in sweep.json under \"skipped\"), %zu entries to run\n",
                plan.skipped.size(), plan.entries.size());
  }
}

int StartSweep(const SweepCommandLine& c, SlurmCli& cli) {
  PlannedSweep p;
  if (auto rc = PlanNewSweep(c, p)) return *rc;
  PrintSkipped(p.m.plan);
  SweepLock lock;  // held until the submitter exits
  std::optional<SweepStore> store;
  SweepStreamRun run;  // after the store: the collector stops first
  if (auto rc = TakeSweepDir(c, p.m, cli, lock, store, run)) return *rc;
  if (c.dry_run) return PrintDryRun(p.m);
  if (auto rc = PreflightChecks(p.m)) return *rc;
  return SubmitAndWatch(c, p, *store, cli, run);
}

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
  // Line by line even into a file or pipe: a submitter killed mid-sweep
  // leaves every line it printed (the sweep id first) for --resume.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  SweepCommandLine c;
  if (auto rc = ParseCommandLine(all_args, c)) return *rc;
  RealSlurmCli cli(CurrentEnvironment());
  InstallCtrlCHandler();
  // The sweep's collector answers agents that may hang up mid-answer: an
  // error return, not death. (The Slurm tools get default signal handling
  // back: RunCommand resets it.)
  ::signal(SIGPIPE, SIG_IGN);
  return c.resume ? ResumeSweep(c, cli) : StartSweep(c, cli);
}

}  // namespace ix
