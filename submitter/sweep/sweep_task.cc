#include "submitter/sweep/sweep_task.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>

#include "core/base/file_text.h"
#include "core/base/paths.h"
#include "core/process/process.h"
#include "submitter/results/agentic_result.h"
#include "submitter/results/benchmark_env.h"
#include "submitter/results/entry_result.h"
#include "submitter/sweep/entry_client.h"
#include "submitter/sweep/slurm_cli.h"
#include "submitter/sweep/sweep_container.h"
#include "submitter/sweep/sweep_files.h"
#include "submitter/sweep/task_events.h"

namespace ix {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void WriteStatus(const std::string& dir, const std::string& sweep, const std::string& state, const std::string& task,
                 double started, double ended, int exit_code, const std::string& reason, const std::string& process) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartObject();
  w.Key("sweep"); w.String(sweep.c_str());  // so a later sweep in this directory never reads it as its own
  w.Key("state"); w.String(state.c_str());
  w.Key("task"); w.String(task.c_str());
  w.Key("started_at"); w.Double(started);
  if (ended > 0) {
    w.Key("ended_at"); w.Double(ended);
    w.Key("exit_code"); w.Int(exit_code);
  }
  if (!reason.empty()) {
    w.Key("failure_reason"); w.String(reason.c_str());
    w.Key("failure_process"); w.String(process.c_str());
  }
  w.EndObject();
  if (Status s = WriteFileAtomic(dir + "/status.json", std::string(buf.GetString()) + "\n"); !s) {
    std::fprintf(stderr, "ixsubmit task: %s\n", s.error().message.c_str());
  }
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// How the step of one entry ended: srun's status (127 when it could not be
// started) and, when it failed, why and in which process.
struct StepOutcome {
  int code = 127;
  std::string reason, process;
};

// The failure.json the step left in `rdir`, else srun's status, as why the
// step failed.
void ExplainFailure(const std::string& rdir, StepOutcome& o) {
  int err = 0;
  const std::string f = ReadFileText(rdir + "/failure.json", &err);
  rapidjson::Document d;
  if (!err) d.Parse(f.c_str());
  if (!err && !d.HasParseError() && d.IsObject() && d.HasMember("reason") && d["reason"].IsString()) {
    o.reason = d["reason"].GetString();
    o.process = d.HasMember("process") && d["process"].IsString() ? d["process"].GetString() : "";
  } else {
    o.reason = "srun exited with status " + std::to_string(o.code) + " (see " + rdir + "/step.log)";
  }
}

// Runs the step (`argv`, srun) with its output in `rdir`/step.log and waits
// for it.
// IX_SWEEP_ID and IX_SWEEP_ENTRY name the entry in the step's events.
// `contract`: the benchmark environment (benchmark_env.h) the client gets.
StepOutcome RunStep(const std::vector<std::string>& argv, const std::string& rdir, const std::string& sweep,
                    int64_t entry, const EnvVars& contract) {
  SpawnSpec spec;
  spec.name = "srun";
  spec.argv = argv;
  std::vector<std::pair<std::string, std::string>> add = {
      {"IX_RESULT_DIR", rdir}, {"IX_SWEEP_ID", sweep}, {"IX_SWEEP_ENTRY", std::to_string(entry)}};
  add.insert(add.end(), contract.begin(), contract.end());
  spec.env = BuildEnvironment(CurrentEnvironment(), add);
  spec.log_path = rdir + "/step.log";
  Result<SpawnedProcess> p = Spawn(spec);
  StepOutcome o;
  if (!p) {
    o.reason = p.error().message;
    return o;
  }
  int st = 0;
  while (::waitpid(p.value().id.pid, &st, 0) < 0 && errno == EINTR) {
  }
  o.code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  if (o.code != 0) ExplainFailure(rdir, o);
  return o;
}

// Fail fast within the bucket: the rest of array `array_job`, never this
// task `task` (its own FAILED state is the record of why).
void CancelRestOfArray(const std::string& array_job, const std::string& task) {
  RealSlurmCli cli(CurrentEnvironment());
  const int64_t id = std::strtoll(array_job.c_str(), nullptr, 10);
  if (Status s = cli.Cancel({array_job}, SlurmState::kPending); !s) std::fprintf(stderr, "%s\n", s.error().message.c_str());
  Result<std::vector<QueueTask>> q = cli.Queue({id});
  std::vector<std::string> others;
  if (q) {
    for (const QueueTask& t : q.value()) {
      if (t.id.ToString() != task && !Final(t.state)) others.push_back(t.id.ToString());
    }
  }
  if (!others.empty()) (void)cli.Cancel(others);
  std::printf("ixsubmit task: fail-fast: cancelled the rest of array %s\n", array_job.c_str());
}

// --sweep-dir DIR --job KEY; an exit status (after saying why) when the
// arguments are not that.
std::optional<int> ParseTaskArgs(const std::vector<std::string>& args, std::string& dir, std::string& key) {
  constexpr char kUsage[] =
      "Usage: ixsubmit task --sweep-dir DIR --job KEY\n"
      "Runs one entry of a sweep inside its Slurm job (the sweep's batch scripts call it).\n";
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) return std::cout << kUsage, 0;
  for (size_t i = 0; i + 1 < args.size(); i += 2) {
    if (args[i] == "--sweep-dir") dir = args[i + 1];
    else if (args[i] == "--job") key = args[i + 1];
    else return std::cerr << "ixsubmit task: unknown argument " << args[i] << "\n", 2;
  }
  if (dir.empty() || key.empty()) return std::cerr << kUsage, 2;
  return std::nullopt;
}

// The environment contract of entry `e` on this node, also written to
// benchmark.env in `rdir`; empty (said why) when the entry has none.
EnvVars WriteContract(const SweepManifest& m, const PlannedEntry& e, const std::string& rdir) {
  std::string node = Env("SLURMD_NODENAME");
  if (node.empty()) {
    char host[256] = {};
    (void)::gethostname(host, sizeof host - 1);
    node = host;
  }
  Result<EnvVars> env = BenchmarkEnvironment(e, node, ContractOptions{rdir, m.client_defaults.duration});
  if (!env) {
    std::fprintf(stderr, "ixsubmit task: no benchmark environment: %s\n", env.error().message.c_str());
    return {};
  }
  if (Status s = WriteFileAtomic(rdir + "/benchmark.env", EnvFileText(env.value())); !s) {
    std::fprintf(stderr, "ixsubmit task: %s\n", s.error().message.c_str());
  }
  return env.value();
}

// After a successful step: agg_RESULT_FILENAME.json, as InferenceX's
// process_result.py would write it (entry_result.h).
void WriteAgg(const SweepManifest& m, const PlannedEntry& e, const std::string& rdir, const EnvVars& contract,
              const std::string& task) {
  if (contract.empty() || !HasAggResult(contract)) return;
  EntryRunInfo run{m.sweep_id, e.index, e.config_key, e.recipe, e.arm, Env("SLURM_JOB_ID"), task,
                   EnvValue(contract, "RUNNER_NAME")};
  Result<std::string> agg = WriteEntryAgg(rdir, contract, run);
  if (agg) std::printf("ixsubmit task: InferenceX result %s\n", agg.value().c_str());
  else std::printf("ixsubmit task: no InferenceX agg result: %s\n", agg.error().message.c_str());
}

// An agentic throughput entry: InferenceX runs the agentic aggregation for
// it (an eval-only entry runs its evals instead).
bool IsAgentic(const EnvVars& contract) {
  return EnvValue(contract, "SCENARIO_TYPE") == "agentic-coding" && EnvValue(contract, "EVAL_ONLY") != "true";
}

// What InferenceX's replay does before the client starts: the node's UTC
// offset for the power window (AIPerf writes its start and end times in
// local time without one).
void PrepareAgentic(const std::string& rdir) {
  char offset[16] = {};
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  if (::localtime_r(&now, &local) && std::strftime(offset, sizeof offset, "%z", &local) > 0) {
    if (Status s = WriteFileAtomic(rdir + "/agentic_power_timezone_offset.txt", std::string(offset) + "\n"); !s) {
      std::fprintf(stderr, "ixsubmit task: %s\n", s.error().message.c_str());
    }
  }
}

// failure.json for a step that ended well but whose result is refused
// (the client's artifacts are missing or fail InferenceX's checks); a
// failure.json the step wrote is kept, it says more.
void RecordResultFailure(const std::string& rdir, const std::string& reason) {
  if (PathExistsOnDisk(rdir + "/failure.json")) return;
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartObject();
  w.Key("process"); w.String("client");
  w.Key("reason"); w.String(reason.c_str());
  w.Key("time_unix_ms"); w.Int64(static_cast<int64_t>(Now() * 1000));
  w.EndObject();
  if (Status s = WriteFileAtomic(rdir + "/failure.json", std::string(buf.GetString()) + "\n"); !s) {
    std::fprintf(stderr, "ixsubmit task: %s\n", s.error().message.c_str());
  }
}

// After an agentic entry's client: RESULT_FILENAME.json as InferenceX's
// agentic aggregation writes it, power, and its validation
// (agentic_result.h). Written from what the client left even when the step
// failed, as InferenceX's replay writes its available results; a refused
// result fails an entry whose step succeeded.
void WriteAgentic(const SweepManifest& m, const PlannedEntry& e, const std::string& rdir, const EnvVars& contract,
                  const std::string& task, StepOutcome& o) {
  EntryRunInfo run{m.sweep_id, e.index, e.config_key, e.recipe, e.arm, Env("SLURM_JOB_ID"), task,
                   EnvValue(contract, "RUNNER_NAME")};
  const int gpus = static_cast<int>(std::strtol(EnvValue(contract, "GPU_COUNT").c_str(), nullptr, 10));
  Result<AgenticOutcome> r = WriteAgenticResult(rdir, contract, run, gpus);
  std::string refused = r ? r.value().failure : r.error().message;
  if (r) std::printf("ixsubmit task: InferenceX agentic result %s\n", r.value().result_path.c_str());
  if (refused.empty()) return;
  std::printf("ixsubmit task: agentic result refused: %s\n", refused.c_str());
  if (o.code != 0) return;  // the step's own failure says why first
  o.code = 1;
  o.reason = refused;
  o.process = "client";
  RecordResultFailure(rdir, refused);
}

}  // namespace

int64_t StepNodeRank() {
  for (const char* name : {"IX_NODE_RANK", "SLURM_NODEID"}) {
    const std::string v = Env(name);
    if (v.empty()) continue;
    char* end = nullptr;
    const long long rank = std::strtoll(v.c_str(), &end, 10);
    if (end && *end == '\0' && rank > 0) return rank;
  }
  return 0;
}

std::optional<TaskStatus> ReadTaskStatus(const std::string& dir, const std::string& sweep_id) {
  int err = 0;
  const std::string text = ReadFileText(dir + "/status.json", &err);
  if (err) return std::nullopt;
  rapidjson::Document d;
  d.Parse(text.c_str());
  if (d.HasParseError() || !d.IsObject() || !d.HasMember("state") || !d["state"].IsString()) return std::nullopt;
  // Left by an earlier sweep in a reused directory (or one written before
  // the sweep id was kept): not this sweep's outcome.
  if (!d.HasMember("sweep") || !d["sweep"].IsString() || sweep_id != d["sweep"].GetString()) return std::nullopt;
  TaskStatus s;
  s.state = d["state"].GetString();
  if (d.HasMember("started_at") && d["started_at"].IsNumber()) s.started = d["started_at"].GetDouble();
  if (d.HasMember("ended_at") && d["ended_at"].IsNumber()) s.ended = d["ended_at"].GetDouble();
  if (d.HasMember("exit_code") && d["exit_code"].IsInt64()) s.exit_code = d["exit_code"].GetInt64();
  if (d.HasMember("failure_reason") && d["failure_reason"].IsString()) s.reason = d["failure_reason"].GetString();
  if (d.HasMember("failure_process") && d["failure_process"].IsString()) s.process = d["failure_process"].GetString();
  return s;
}

int RunTaskCommand(const std::vector<std::string>& args) {
  std::string dir, key;
  if (std::optional<int> usage = ParseTaskArgs(args, dir, key)) return *usage;
  // A node after the head of a step across nodes: the head's task runs the
  // client and writes the entry's files; the plugin keeps this node's part
  // of the engine up until the head ends (docs/SWEEP.md).
  if (const int64_t rank = StepNodeRank(); rank > 0) {
    std::printf("ixsubmit task: node rank %lld of a step across nodes: nothing to run here (the head runs the "
                "client)\n", static_cast<long long>(rank));
    return 0;
  }
  Result<SweepManifest> m = ReadSweepManifest(dir);
  if (!m) return std::cerr << "ixsubmit task: " << m.error().message << "\n", 1;
  const PlannedJob* job = nullptr;
  for (const PlannedJob& j : m.value().plan.jobs) {
    if (j.key == key) job = &j;
  }
  if (!job) return std::cerr << "ixsubmit task: " << dir << "/sweep.json has no job '" << key << "'\n", 1;
  const std::string task_env = Env("SLURM_ARRAY_TASK_ID");
  const size_t ai = task_env.empty() ? 0 : static_cast<size_t>(std::strtoul(task_env.c_str(), nullptr, 10));
  if (ai >= job->entries.size()) {
    std::cerr << "ixsubmit task: SLURM_ARRAY_TASK_ID=" << task_env << " is outside job " << key << " (0-"
              << job->entries.size() - 1 << ")\n";
    return 1;
  }
  const PlannedEntry& e = m.value().plan.entries[static_cast<size_t>(job->entries[ai])];
  const std::string array_job = Env("SLURM_ARRAY_JOB_ID");
  const std::string task = array_job.empty() ? Env("SLURM_JOB_ID") : array_job + "_" + task_env;
  const std::string rdir = TaskResultDir(m.value(), e.index);
  if (Status made = MakeDirs(rdir, 0755, 0755, "the result directory"); !made) std::fprintf(stderr, "ixsubmit task: %s\n", made.error().message.c_str());
  const std::string job_id = Env("SLURM_JOB_ID");
  TaskReporter reporter(m.value(), e.index, (job_id.empty() ? std::string("0") : job_id) + ".batch");
  reporter.Route();
  const double started = Now();
  WriteStatus(rdir, m.value().sweep_id, "running", task, started, 0, 0, "", "");
  reporter.State("running");
  std::printf("ixsubmit task: entry %lld: %s %s conc %lld (%s), results in %s\n", static_cast<long long>(e.index),
              e.config_key.c_str(), e.arm.c_str(), static_cast<long long>(e.conc), e.recipe.c_str(), rdir.c_str());
  std::fflush(stdout);

  // The squash file is looked for here, on the node, when the step starts:
  // one imported after the sweep was submitted is used too.
  const EnvVars contract = WriteContract(m.value(), e, rdir);
  const Result<EntryClient> client = ResolveEntryClient(m.value(), e, contract, rdir, CurrentEnvironment());
  StepOutcome o;
  if (client) {
    std::printf("ixsubmit task: client: %s\n", client.value().description.c_str());
    const std::vector<std::string> argv = StepSrunArgv(m.value(), e, PathExistsOnDisk, client.value().argv);
    for (const std::string& a : argv) {
      if (a.rfind("--container-image=", 0) == 0) std::printf("ixsubmit task: container image %s\n", a.c_str() + 18);
    }
    std::fflush(stdout);
    if (IsAgentic(contract)) PrepareAgentic(rdir);
    o = RunStep(argv, rdir, m.value().sweep_id, e.index, contract);
    if (IsAgentic(contract)) WriteAgentic(m.value(), e, rdir, contract, task, o);
    else if (o.code == 0) WriteAgg(m.value(), e, rdir, contract, task);
  } else {
    o.reason = "no client command: " + client.error().message;
  }
  WriteStatus(rdir, m.value().sweep_id, o.code == 0 ? "succeeded" : "failed", task, started, Now(), o.code, o.reason,
              o.process);
  // The results first, then the state that says the entry is over.
  const size_t delivered = reporter.Results(rdir);
  reporter.State(o.code == 0 ? "succeeded" : "failed", o.code, o.reason, o.process);
  if (reporter.enabled()) std::printf("ixsubmit task: %zu result files handed to the node agent\n", delivered);
  std::printf("ixsubmit task: entry %lld %s%s%s\n", static_cast<long long>(e.index),
              o.code == 0 ? "succeeded" : "failed: ", o.code == 0 ? "" : o.reason.c_str(), "");
  std::fflush(stdout);
  if (o.code != 0 && m.value().fail_fast && !job->canary && !array_job.empty()) CancelRestOfArray(array_job, task);
  return o.code == 0 ? 0 : 1;
}

}  // namespace ix
