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
#include <fstream>
#include <iostream>

#include "core/base/file_text.h"
#include "core/base/paths.h"
#include "core/process/process.h"
#include "submitter/results/benchmark_env.h"
#include "submitter/results/entry_result.h"
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
EnvVars WriteContract(const PlannedEntry& e, const std::string& rdir) {
  std::string node = Env("SLURMD_NODENAME");
  if (node.empty()) {
    char host[256] = {};
    (void)::gethostname(host, sizeof host - 1);
    node = host;
  }
  Result<EnvVars> env = BenchmarkEnvironment(e, node);
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
  const std::vector<std::string> argv = StepSrunArgv(m.value(), e, PathExistsOnDisk);
  for (const std::string& a : argv) {
    if (a.rfind("--container-image=", 0) == 0) std::printf("ixsubmit task: container image %s\n", a.c_str() + 18);
  }
  std::fflush(stdout);
  const EnvVars contract = WriteContract(e, rdir);
  const StepOutcome o = RunStep(argv, rdir, m.value().sweep_id, e.index, contract);
  if (o.code == 0) WriteAgg(m.value(), e, rdir, contract, task);
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
