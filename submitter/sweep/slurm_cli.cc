#include "submitter/sweep/slurm_cli.h"

#include <unistd.h>

#include <set>

#include "core/base/text.h"

namespace ix {
namespace {

std::string Quote(std::string_view s) { return "'" + std::string(s) + "'"; }

std::string Join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

// stderr (else stdout) of a failed run, trimmed, verbatim.
std::string Said(const CommandOutput& o) {
  const std::string_view err = Trim(o.err);
  return std::string(err.empty() ? Trim(o.out) : err);
}

// The error for a program that ran and did not succeed: WHAT failed (how): what it said.
Error Failed(const std::string& what, const CommandOutput& o) {
  return Error{what + " failed (" + o.Describe() + "): " + Said(o)};
}

}  // namespace

int64_t MaxArraySize(const std::vector<std::string>& env) {
  Result<CommandOutput> r = RunCommand({"scontrol", "show", "config"}, env, std::chrono::seconds(10));
  if (!r || !r.value().ok()) return 1001;
  return ParseMaxArraySize(r.value().out).value_or(1001);
}

// ---- RealSlurmCli -------------------------------------------------------------------------

RealSlurmCli::RealSlurmCli(std::vector<std::string> env, SlurmPrograms programs, std::chrono::milliseconds timeout)
    : env_(std::move(env)), programs_(std::move(programs)), timeout_(timeout) {}

Result<CommandOutput> RealSlurmCli::Run(const std::vector<std::string>& argv) const {
  return RunCommand(argv, env_, timeout_);
}

Result<CommandOutput> RealSlurmCli::RunOk(const std::string& what, const std::vector<std::string>& argv) const {
  Result<CommandOutput> r = Run(argv);
  if (!r) return Error{what + ": " + r.error().message};
  if (!r.value().ok()) return Failed(what, r.value());
  return r;
}

std::vector<std::string> RealSlurmCli::SubmitArgv(const std::vector<std::string>& sbatch_args,
                                                  const std::string& script_path) const {
  std::vector<std::string> argv{programs_.sbatch, "--parsable"};
  argv.insert(argv.end(), sbatch_args.begin(), sbatch_args.end());
  argv.push_back(script_path);
  return argv;
}

std::vector<std::string> RealSlurmCli::CancelArgv(const std::vector<std::string>& ids,
                                                  std::optional<SlurmState> only_in_state) const {
  // --quiet: a job that already ended is not an error.
  std::vector<std::string> argv{programs_.scancel, "--quiet"};
  if (only_in_state) argv.push_back(std::string("--state=") + SlurmStateName(*only_in_state));
  argv.insert(argv.end(), ids.begin(), ids.end());
  return argv;
}

std::vector<std::string> RealSlurmCli::QueueArgv(const std::vector<int64_t>& job_ids) const {
  std::vector<std::string> ids;
  for (int64_t id : job_ids) ids.push_back(std::to_string(id));
  // --array: one line per task, pending ones too; --states=all: with only
  // --jobs, finished tasks still known to slurmctld are shown as well.
  return {programs_.squeue, "--noheader", "--array", "--states=all", "--jobs=" + Join(ids, ","),
          std::string("--format=") + kSqueueFormat};
}

Result<int64_t> RealSlurmCli::Submit(const std::vector<std::string>& sbatch_args, const std::string& script_path) {
  Result<CommandOutput> r = Run(SubmitArgv(sbatch_args, script_path));
  if (!r) return Error{"sbatch " + script_path + ": " + r.error().message + " " + kSubmitOutcomeUnknown};
  const CommandOutput& o = r.value();
  // Killed by a signal: slurmctld may have taken the job before sbatch died.
  if (o.signal) return Error{"sbatch " + script_path + " " + o.Describe() + " " + kSubmitOutcomeUnknown};
  if (!o.ok()) return Error{"sbatch rejected " + script_path + " (" + o.Describe() + "): " + Said(o)};
  // Exit 0 means slurmctld accepted a job; only its id is missing.
  Result<int64_t> id = ParseSbatchParsable(o.out);
  if (!id) return Error{"sbatch " + script_path + ": " + id.error().message + " " + kSubmitOutcomeUnknown};
  return id;
}

bool SubmitOutcomeUnknown(const Error& e) {
  const std::string_view m = e.message, tail = kSubmitOutcomeUnknown;
  return m.size() >= tail.size() && m.substr(m.size() - tail.size()) == tail;
}

Status RealSlurmCli::Cancel(const std::vector<std::string>& ids, std::optional<SlurmState> only_in_state) {
  if (ids.empty()) return Ok{};
  for (const std::string& id : ids) {
    if (Result<TaskId> t = ParseTaskId(id); !t) return Error{"scancel: " + t.error().message};
  }
  if (only_in_state && *only_in_state != SlurmState::kPending && *only_in_state != SlurmState::kRunning &&
      *only_in_state != SlurmState::kSuspended) {
    return Error{std::string("scancel: --state=") + SlurmStateName(*only_in_state) +
                 " is not accepted; use PENDING, RUNNING or SUSPENDED"};
  }
  const std::string what = "scancel " + Join(ids, " ");
  Result<CommandOutput> r = Run(CancelArgv(ids, only_in_state));
  if (!r) return Error{what + ": " + r.error().message};
  const CommandOutput& o = r.value();
  if (o.ok()) return Ok{};
  // A job that ended or was purged meanwhile is what we wanted anyway.
  bool benign = o.signal == 0;
  for (std::string_view line : OutputLines(o.err)) {
    if (Trim(line).empty()) continue;
    if (line.find("already completing or completed") == std::string_view::npos &&
        line.find("Invalid job id specified") == std::string_view::npos) {
      benign = false;
    }
  }
  if (benign) return Ok{};
  return Failed(what, o);
}

Result<std::vector<QueueTask>> RealSlurmCli::Queue(const std::vector<int64_t>& job_ids) {
  if (job_ids.empty()) return std::vector<QueueTask>{};
  Result<CommandOutput> r = Run(QueueArgv(job_ids));
  if (!r) return Error{"squeue: " + r.error().message};
  const CommandOutput& o = r.value();
  if (!o.ok()) {
    // Asking for a single job slurmctld has forgotten is an error to squeue.
    if (o.signal == 0 && o.err.find("Invalid job id specified") != std::string::npos) return std::vector<QueueTask>{};
    return Failed("squeue", o);
  }
  return ParseSqueue(o.out);
}

Result<std::vector<JobInfo>> RealSlurmCli::ShowJob(int64_t job_id) {
  const std::string id = std::to_string(job_id);
  Result<CommandOutput> r = RunOk("scontrol show job " + id, {programs_.scontrol, "--oneliner", "show", "job", id});
  if (!r) return r.error();
  return ParseScontrolShowJob(r.value().out);
}

Result<std::vector<int64_t>> RealSlurmCli::FindJobsByName(const std::string& name) {
  if (name.empty() || name.find(',') != std::string::npos) {
    return Error{"job name " + Quote(name) + ": must be non-empty and hold no ','"};
  }
  const std::string user = "--user=" + std::to_string(::getuid());
  const std::string what = "squeue --name=" + name;
  Result<CommandOutput> r = RunOk(what, {programs_.squeue, "--noheader", user, "--states=all", "--name=" + name,
                                         "--format=%F"});
  if (!r) return r.error();
  std::set<int64_t> ids;
  for (std::string_view line : OutputLines(r.value().out)) {
    if (Trim(line).empty()) continue;
    const std::optional<int64_t> id = LeadingJobId(Trim(line));
    if (!id) return Error{what + ": unexpected line " + Quote(line)};
    ids.insert(*id);
  }
  if (ids.empty()) {
    // slurmctld forgets finished jobs after MinJobAge; accounting does not.
    // Where accounting is off sacct fails, and squeue's answer stands.
    Result<CommandOutput> a = Run({programs_.sacct, "--noheader", "--allocations", "--parsable2", user,
                                   "--name=" + name, "--format=JobID", "--starttime=now-30days"});
    if (a && a.value().ok()) {
      for (std::string_view line : OutputLines(a.value().out)) {
        if (const std::optional<int64_t> id = LeadingJobId(Trim(line))) ids.insert(*id);
      }
    }
  }
  return std::vector<int64_t>(ids.begin(), ids.end());
}

}  // namespace ix
