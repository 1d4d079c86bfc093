// FakeSlurmCli: a Slurm in memory, for tests of the sweep logic
// (submitter/sweep/slurm_cli.h: the interface exists for it).
//
// sbatch hands out job ids (1001, 1002, ...) and records every call with
// what the sweep logic asked for: the job name, the array size, the
// dependency. Each job has its tasks (an array's 0..N-1, a plain job's
// one), PENDING at first (reason "Dependency" when it has one, else
// "None"); a test moves them through states as time goes on, directly or
// scripted per squeue call (OnQueue: the fake's clock is the number of
// squeue calls), and makes slurmctld forget a job. scancel moves the tasks
// it names that are not final to CANCELLED and is recorded. Failures are
// queued per sbatch call: a clean rejection, a lost answer (the job made,
// the answer lost) and a lost job (neither), the last two with the message
// SubmitOutcomeUnknown recognises.
//
// Invariants: job ids are unique and increasing; a job's task states only
// change by a test's call or scancel; FindJobsByName knows every job made.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "submitter/sweep/slurm_cli.h"

namespace ix::test {

class FakeSlurmCli : public SlurmCli {
 public:
  // What one sbatch call asked for and what came of it.
  struct Submission {
    std::vector<std::string> args;
    std::string script;
    std::string name;                    // --job-name
    std::optional<int64_t> array_size;   // from --array=0-N[%T]; unset for a plain job
    std::optional<int64_t> throttle;     // the %T of --array
    std::string dependency;              // --dependency's value; "" = none
    std::optional<int64_t> job_id;       // unset when no job was made
  };
  // What the next sbatch call does.
  enum class SbatchOutcome { kOk, kReject, kLostAnswer, kLostJob };

  // ---- the SlurmCli interface ------------------------------------------------
  Result<int64_t> Submit(const std::vector<std::string>& sbatch_args, const std::string& script_path) override;
  Status Cancel(const std::vector<std::string>& ids, std::optional<SlurmState> only_in_state = {}) override;
  Result<std::vector<QueueTask>> Queue(const std::vector<int64_t>& job_ids) override;
  Result<std::vector<JobInfo>> ShowJob(int64_t job_id) override;
  Result<std::vector<int64_t>> FindJobsByName(const std::string& name) override;

  // ---- scripting -------------------------------------------------------------------
  // The outcome of the next sbatch call not yet scripted (calls beyond the
  // queue succeed).
  void NextSubmit(SbatchOutcome outcome) { outcomes_.push_back(outcome); }
  // Runs `change` just before answering squeue call number `call` (from 1).
  void OnQueue(int call, std::function<void(FakeSlurmCli&)> change);
  // Every task of `job`, or one of its array tasks.
  void SetState(int64_t job, SlurmState state, const std::string& reason = "None");
  void SetTaskState(int64_t job, int64_t task, SlurmState state, const std::string& reason = "None");
  // slurmctld forgot the job (MinJobAge): squeue no longer lists it.
  void Forget(int64_t job);
  // A job made outside Submit (say by an sbatch whose caller died before
  // recording it); returns its id.
  int64_t AddJob(const std::string& name, std::optional<int64_t> array_size = std::nullopt);
  // squeue fails (until cleared with nullopt).
  void FailQueue(std::optional<std::string> message) { queue_error_ = std::move(message); }

  // ---- what happened ---------------------------------------------------------------
  const std::vector<Submission>& submissions() const { return submissions_; }
  // Every scancel call's ids, in order.
  const std::vector<std::vector<std::string>>& cancels() const { return cancels_; }
  int queue_calls() const { return queue_calls_; }
  int lookups() const { return lookups_; }
  // The state of a plain job, or of one task of an array; nullopt when
  // there is no such job or task.
  std::optional<SlurmState> StateOf(int64_t job, std::optional<int64_t> task = std::nullopt) const;
  // The job made with this name, if any.
  std::optional<int64_t> JobNamed(const std::string& name) const;

 private:
  struct Task {
    SlurmState state = SlurmState::kPending;
    std::string reason = "None";
  };
  // A job slurmctld has: an array's tasks by index, or a plain job's one (index -1).
  struct Job {
    std::string name;
    bool array = false;
    std::map<int64_t, Task> tasks;
    bool forgotten = false;
  };
  int64_t MakeJob(const std::string& name, std::optional<int64_t> array_size, bool has_dependency);
  void CancelTask(Task& t, std::optional<SlurmState> only_in_state);

  int64_t next_id_ = 1001;
  std::map<int64_t, Job> jobs_;
  std::vector<Submission> submissions_;
  std::vector<std::vector<std::string>> cancels_;
  std::deque<SbatchOutcome> outcomes_;
  std::multimap<int, std::function<void(FakeSlurmCli&)>> on_queue_;
  std::optional<std::string> queue_error_;
  int queue_calls_ = 0, lookups_ = 0;
};

}  // namespace ix::test
