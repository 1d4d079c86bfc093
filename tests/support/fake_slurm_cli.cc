#include "tests/support/fake_slurm_cli.h"

#include <utility>

namespace ix::test {
namespace {

// The value of `--NAME=VALUE` in `args`; "" when absent.
std::string Flag(const std::vector<std::string>& args, const std::string& name) {
  const std::string prefix = "--" + name + "=";
  for (const std::string& a : args) {
    if (a.rfind(prefix, 0) == 0) return a.substr(prefix.size());
  }
  return "";
}

// "0-N" or "0-N%T": the array's size and throttle.
void ParseArray(const std::string& spec, std::optional<int64_t>& size, std::optional<int64_t>& throttle) {
  if (spec.empty()) return;
  const size_t dash = spec.find('-');
  const size_t pct = spec.find('%');
  const std::string last = spec.substr(dash + 1, pct == std::string::npos ? std::string::npos : pct - dash - 1);
  size = std::stoll(last) + 1;
  if (pct != std::string::npos) throttle = std::stoll(spec.substr(pct + 1));
}

}  // namespace

int64_t FakeSlurmCli::MakeJob(const std::string& name, std::optional<int64_t> array_size, bool has_dependency) {
  const int64_t id = next_id_++;
  Job& j = jobs_[id];
  j.name = name;
  j.array = array_size.has_value();
  Task t;
  if (has_dependency) t.reason = "Dependency";
  if (!j.array) j.tasks[-1] = t;
  for (int64_t i = 0; j.array && i < *array_size; ++i) j.tasks[i] = t;
  return id;
}

Result<int64_t> FakeSlurmCli::Submit(const std::vector<std::string>& sbatch_args, const std::string& script_path) {
  Submission s;
  s.args = sbatch_args;
  s.script = script_path;
  s.name = Flag(sbatch_args, "job-name");
  s.dependency = Flag(sbatch_args, "dependency");
  ParseArray(Flag(sbatch_args, "array"), s.array_size, s.throttle);
  SbatchOutcome outcome = SbatchOutcome::kOk;
  if (!outcomes_.empty()) {
    outcome = outcomes_.front();
    outcomes_.pop_front();
  }
  if (outcome == SbatchOutcome::kOk || outcome == SbatchOutcome::kLostAnswer) {
    s.job_id = MakeJob(s.name, s.array_size, !s.dependency.empty());
  }
  submissions_.push_back(s);
  switch (outcome) {
    case SbatchOutcome::kOk: return *s.job_id;
    case SbatchOutcome::kReject:
      return Error{"sbatch rejected " + script_path + " (exit status 1): sbatch: error: invalid partition specified"};
    case SbatchOutcome::kLostAnswer:
    case SbatchOutcome::kLostJob: break;
  }
  return Error{"sbatch " + script_path + ": timed out after 60 s " + kSubmitOutcomeUnknown};
}

void FakeSlurmCli::CancelTask(Task& t, std::optional<SlurmState> only_in_state) {
  if (Final(t.state) || (only_in_state && t.state != *only_in_state)) return;
  t.state = SlurmState::kCancelled;
}

Status FakeSlurmCli::Cancel(const std::vector<std::string>& ids, std::optional<SlurmState> only_in_state) {
  cancels_.push_back(ids);
  for (const std::string& text : ids) {
    Result<TaskId> id = ParseTaskId(text);
    if (!id) return Error{"scancel: error: Invalid job id " + text};
    auto it = jobs_.find(id.value().job_id);
    if (it == jobs_.end() || it->second.forgotten) continue;  // ended long ago: not an error
    for (auto& [index, task] : it->second.tasks) {
      if (!id.value().task || *id.value().task == index) CancelTask(task, only_in_state);
    }
  }
  return Ok{};
}

Result<std::vector<QueueTask>> FakeSlurmCli::Queue(const std::vector<int64_t>& job_ids) {
  ++queue_calls_;
  // Changes scripted for this call may script more for it; take them one at a time.
  for (auto it = on_queue_.find(queue_calls_); it != on_queue_.end(); it = on_queue_.find(queue_calls_)) {
    std::function<void(FakeSlurmCli&)> change = std::move(it->second);
    on_queue_.erase(it);
    change(*this);
  }
  if (queue_error_) return Error{*queue_error_};
  std::vector<QueueTask> out;
  for (int64_t id : job_ids) {
    auto it = jobs_.find(id);
    if (it == jobs_.end() || it->second.forgotten) continue;
    for (const auto& [index, task] : it->second.tasks) {
      QueueTask q;
      q.id.job_id = id;
      if (it->second.array) q.id.task = index;
      q.state = task.state;
      q.state_name = SlurmStateName(task.state);
      q.reason = task.reason;
      out.push_back(q);
    }
  }
  return out;
}

Result<std::vector<JobInfo>> FakeSlurmCli::ShowJob(int64_t job_id) {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end() || it->second.forgotten) return Error{"slurm_load_jobs error: Invalid job id specified"};
  std::vector<JobInfo> out;
  for (const auto& [index, task] : it->second.tasks) {
    JobInfo info;
    info.job_id = job_id;
    if (it->second.array) {
      info.array_job_id = job_id;
      info.array_task_id = std::to_string(index);
    }
    info.name = it->second.name;
    info.state = task.state;
    info.state_name = SlurmStateName(task.state);
    info.reason = task.reason;
    out.push_back(info);
  }
  return out;
}

Result<std::vector<int64_t>> FakeSlurmCli::FindJobsByName(const std::string& name) {
  ++lookups_;
  std::vector<int64_t> out;
  for (const auto& [id, job] : jobs_) {
    if (job.name == name) out.push_back(id);
  }
  return out;
}

void FakeSlurmCli::OnQueue(int call, std::function<void(FakeSlurmCli&)> change) {
  on_queue_.emplace(call, std::move(change));
}

void FakeSlurmCli::SetState(int64_t job, SlurmState state, const std::string& reason) {
  for (auto& [index, task] : jobs_.at(job).tasks) task = Task{state, reason};
}

void FakeSlurmCli::SetTaskState(int64_t job, int64_t task, SlurmState state, const std::string& reason) {
  jobs_.at(job).tasks.at(task) = Task{state, reason};
}

void FakeSlurmCli::Forget(int64_t job) { jobs_.at(job).forgotten = true; }

int64_t FakeSlurmCli::AddJob(const std::string& name, std::optional<int64_t> array_size) {
  return MakeJob(name, array_size, false);
}

std::optional<SlurmState> FakeSlurmCli::StateOf(int64_t job, std::optional<int64_t> task) const {
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return std::nullopt;
  auto t = it->second.tasks.find(task.value_or(-1));
  if (t == it->second.tasks.end()) return std::nullopt;
  return t->second.state;
}

std::optional<int64_t> FakeSlurmCli::JobNamed(const std::string& name) const {
  for (const auto& [id, job] : jobs_) {
    if (job.name == name) return id;
  }
  return std::nullopt;
}

}  // namespace ix::test
