#include "submitter/sweep/sweep_driver.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "core/base/file_text.h"
#include "submitter/sweep/sweep_test_plan.h"
#include "tests/support/fake_slurm_cli.h"
#include "tests/support/test.h"

namespace ix {
namespace {

using test::FakeSlurmCli;
using Outcome = FakeSlurmCli::SbatchOutcome;

// A job of the plan: "canary", "bucket:NAME" or "bucket:NAME#2", with its
// number of entries.
struct JobSpec {
  std::string key;
  int entries = 1;
};

// A recorded sweep of `jobs` (test::RecordedSweep). Entries are numbered in
// plan order (the canary's first).
struct Sweep : test::RecordedSweep {
  explicit Sweep(const std::vector<JobSpec>& jobs, bool fail_fast = true)
      : RecordedSweep("ix-sweep-driver", fail_fast) {
    for (const JobSpec& spec : jobs) {
      AddJob(spec.key, spec.entries, spec.key == "canary" ? "cfg-canary" : "cfg-" + BucketOfJobKey(spec.key));
    }
    Record();
  }

  SweepDriver Driver() { return SweepDriver(*store, slurm, id, m, Hooks()); }
  int SubmitAndWatch() {
    SweepDriver d = Driver();
    EXPECT_TRUE(d.Submit().ok());
    return d.Watch();
  }

  // The entry's task wrote its status.json, as `ixsubmit task` does.
  void Wrote(int64_t index, const std::string& state, double started, double ended, const std::string& reason = "") {
    const std::string rdir = ResultDir(m, index);
    std::filesystem::create_directories(rdir);
    std::ofstream(rdir + "/status.json")
        << "{\"sweep\":\"" << id << "\",\"state\":\"" << state << "\",\"task\":\"t\",\"started_at\":" << started
        << ",\"ended_at\":" << ended << ",\"exit_code\":" << (state == "succeeded" ? 0 : 1)
        << (reason.empty() ? "" : ",\"failure_reason\":\"" + reason + "\",\"failure_process\":\"engine\"") << "}\n";
  }
  // Entries [first, last] succeeded, each taking 10 s.
  void Succeeded(int64_t first, int64_t last) {
    for (int64_t i = first; i <= last; ++i) Wrote(i, "succeeded", clock - 10, clock);
  }

  std::string Output() {
    std::fflush(out);
    int err = 0;
    return ReadFileText(dir.path() + "/out.txt", &err);
  }
  LoadedSweep Load() { return store->LoadSweep(id).value(); }
  const EntryRecord& Entry(const LoadedSweep& l, int64_t index) { return l.entries[static_cast<size_t>(index)]; }
  JobState JobStateOf(const std::string& key) { return Load().FindJob(key)->state; }
};

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// ---- submission ---------------------------------------------------------------------

TEST(SweepDriver, SubmitsTheCanaryFirstThenEachArrayAfterIt) {
  Sweep s({{"canary", 1}, {"bucket:a", 3}, {"bucket:b", 2}});
  ASSERT_TRUE(s.Driver().Submit().ok());
  const auto& subs = s.slurm.submissions();
  ASSERT_EQ(subs.size(), 3u);
  EXPECT_NE(subs[0].name.find("-canary-"), std::string::npos) << subs[0].name;
  EXPECT_FALSE(subs[0].array_size);
  EXPECT_EQ(subs[0].dependency, "");
  EXPECT_EQ(subs[1].array_size, 3);
  EXPECT_EQ(subs[1].throttle, 4);
  EXPECT_EQ(subs[1].dependency, "afterok:1001");
  EXPECT_EQ(subs[2].array_size, 2);
  EXPECT_EQ(subs[2].dependency, "afterok:1001");
  EXPECT_EQ(subs[2].script, s.m.sweep_dir + "/bucket-b.sbatch");
  const LoadedSweep l = s.Load();
  EXPECT_EQ(*l.FindJob("bucket:b")->slurm_job_id, 1003);
  EXPECT_EQ(s.Entry(l, 0).slurm_task_id, "1001");
  EXPECT_EQ(s.Entry(l, 3).slurm_task_id, "1002_2");
  EXPECT_EQ(s.Entry(l, 5).slurm_task_id, "1003_1");
}

TEST(SweepDriver, WithoutACanaryTheArraysDependOnNothing) {
  Sweep s({{"bucket:a", 2}, {"bucket:b", 1}});
  ASSERT_TRUE(s.Driver().Submit().ok());
  ASSERT_EQ(s.slurm.submissions().size(), 2u);
  for (const auto& sub : s.slurm.submissions()) EXPECT_EQ(sub.dependency, "");
}

// sbatch took the job but its answer was lost: found by name, not submitted twice.
TEST(SweepDriver, ALostSbatchAnswerIsFoundByNameNotSubmittedAgain) {
  Sweep s({{"canary", 1}, {"bucket:a", 2}});
  s.slurm.NextSubmit(Outcome::kOk);
  s.slurm.NextSubmit(Outcome::kLostAnswer);
  ASSERT_TRUE(s.Driver().Submit().ok());
  EXPECT_EQ(s.slurm.submissions().size(), 2u);
  EXPECT_GE(s.slurm.lookups(), 1);
  EXPECT_EQ(*s.Load().FindJob("bucket:a")->slurm_job_id, *s.slurm.JobNamed(s.slurm.submissions()[1].name));
  EXPECT_EQ(s.Entry(s.Load(), 2).slurm_task_id, "1002_1");
}

// The submitter stopped after the canary and one bucket (here: sbatch
// rejected the next); the resumed one submits only the rest, after the
// canary it already has.
TEST(SweepDriver, AResumeSubmitsOnlyWhatWasNotSubmitted) {
  Sweep s({{"canary", 1}, {"bucket:a", 2}, {"bucket:b", 2}});
  s.slurm.NextSubmit(Outcome::kOk);
  s.slurm.NextSubmit(Outcome::kOk);
  s.slurm.NextSubmit(Outcome::kReject);
  EXPECT_FALSE(s.Driver().Submit().ok());
  EXPECT_EQ(s.JobStateOf("bucket:b"), JobState::kPlanned);
  ASSERT_TRUE(s.Driver().Submit().ok());
  const auto& subs = s.slurm.submissions();
  ASSERT_EQ(subs.size(), 4u);
  EXPECT_EQ(subs[3].name, subs[2].name);
  EXPECT_EQ(subs[3].dependency, "afterok:1001");
  EXPECT_EQ(*s.Load().FindJob("bucket:b")->slurm_job_id, 1003);
  ASSERT_TRUE(s.Driver().Submit().ok());  // a third submitter has nothing to submit
  EXPECT_EQ(subs.size(), 4u);
}

// sbatch's outcome unknown and no job of its name yet: the job stays
// `submitting`; slurmctld did make it, so the resume records it instead of
// submitting it again.
TEST(SweepDriver, AResumeFindsAJobLeftSubmittingByName) {
  Sweep s({{"canary", 1}, {"bucket:a", 2}});
  s.slurm.NextSubmit(Outcome::kOk);
  s.slurm.NextSubmit(Outcome::kLostJob);
  EXPECT_FALSE(s.Driver().Submit().ok());
  EXPECT_EQ(s.JobStateOf("bucket:a"), JobState::kSubmitting);
  const int64_t made = s.slurm.AddJob(s.slurm.submissions()[1].name, 2);
  ASSERT_TRUE(s.Driver().Submit().ok());
  EXPECT_EQ(s.slurm.submissions().size(), 2u);
  EXPECT_EQ(*s.Load().FindJob("bucket:a")->slurm_job_id, made);
}

TEST(SweepDriver, RecordsThePlanAsTheStoreHoldsIt) {
  Sweep s({{"canary", 1}, {"bucket:a", 2}});
  const NewSweep ns = SweepRecordOf(s.m, SweepMode::kFullSweepEnabled, {"ixsubmit", "sweep"});
  ASSERT_EQ(ns.jobs.size(), 2u);
  EXPECT_EQ(ns.jobs[0].kind, JobKind::kCanary);
  EXPECT_EQ(ns.jobs[1].kind, JobKind::kArray);
  EXPECT_EQ(ns.jobs[1].array_size, 2);
  EXPECT_EQ(ns.jobs[1].throttle, 4);
  EXPECT_EQ(ns.jobs[1].depends_on, "canary");
  EXPECT_EQ(ns.jobs[1].job_name, JobName(s.m, s.m.plan.jobs[1]));
  EXPECT_FALSE(ns.entries[0].array_index);
  EXPECT_EQ(ns.entries[2].array_index, 1);
}

// ---- watching ----------------------------------------------------------------------------

TEST(SweepDriver, ACleanSweepEndsWhenEveryEntrySucceeded) {
  Sweep s({{"canary", 1}, {"bucket:a", 2}});
  s.slurm.OnQueue(1, [](FakeSlurmCli& f) { f.SetState(1001, SlurmState::kRunning); });
  s.slurm.OnQueue(2, [&](FakeSlurmCli& f) {
    s.Succeeded(0, 0);
    f.SetState(1001, SlurmState::kCompleted);
    f.SetState(1002, SlurmState::kRunning);
  });
  s.slurm.OnQueue(3, [&](FakeSlurmCli& f) {
    s.Succeeded(1, 2);
    f.SetState(1002, SlurmState::kCompleted);
  });
  EXPECT_EQ(s.SubmitAndWatch(), 0);
  EXPECT_EQ(s.Load().sweep.state, SweepState::kSucceeded);
  EXPECT_TRUE(s.slurm.cancels().empty());
  const std::string out = s.Output();
  EXPECT_NE(out.find("sweep " + s.id + " succeeded after 2s: pending 0, running 0, done 3, failed 0, cancelled 0. "
                     "Results: " + s.m.sweep_dir + "/results; ixsubmit status " + s.id + "\n"),
            std::string::npos)
      << out;
  EXPECT_EQ(s.Entry(s.Load(), 2).result_path, ResultDir(s.m, 2));
}

// Without a terminal: one line per job whenever its counts change, none
// while they stand still.
TEST(SweepDriver, ShowsEachJobsCountsWhenTheyChange) {
  Sweep s({{"bucket:a", 3}}, /*fail_fast=*/false);
  s.slurm.OnQueue(2, [](FakeSlurmCli& f) {
    f.SetTaskState(1001, 0, SlurmState::kRunning);
    f.SetTaskState(1001, 1, SlurmState::kRunning);
  });
  // look 3 sees nothing new
  s.slurm.OnQueue(4, [&](FakeSlurmCli& f) {
    s.Succeeded(0, 0);
    s.Wrote(1, "failed", s.clock - 5, s.clock, "engine exited");
    f.SetState(1001, SlurmState::kRunning);
  });
  s.slurm.OnQueue(5, [&](FakeSlurmCli&) { s.Succeeded(2, 2); });
  EXPECT_EQ(s.SubmitAndWatch(), 1);  // one failed
  const std::string out = s.Output();
  const std::string line = "sweep " + s.id + ": bucket:a: ";
  EXPECT_NE(out.find(line + "pending 3, running 0, done 0, failed 0, cancelled 0\n"), std::string::npos) << out;
  EXPECT_NE(out.find(line + "pending 1, running 2, done 0, failed 0, cancelled 0\n"), std::string::npos) << out;
  EXPECT_NE(out.find(line + "pending 0, running 1, done 1, failed 1, cancelled 0\n"), std::string::npos) << out;
  EXPECT_NE(out.find(line + "pending 0, running 0, done 2, failed 1, cancelled 0\n"), std::string::npos) << out;
  EXPECT_EQ(Count(out, line), 4) << out;
  EXPECT_NE(out.find("sweep " + s.id + " failed after 4s: pending 0, running 0, done 2, failed 1, cancelled 0."),
            std::string::npos) << out;
  const LoadedSweep loaded = s.Load();  // kept: `failed` refers into it
  const EntryRecord& failed = s.Entry(loaded, 1);
  EXPECT_EQ(failed.failure_reason, "engine exited");
  EXPECT_EQ(failed.failure_process, "engine");
}

TEST(SweepDriver, OnATerminalRedrawsABarPerJob) {
  Sweep s({{"canary", 1}, {"bucket:a", 2}});
  s.redraw = true;
  s.slurm.OnQueue(1, [&](FakeSlurmCli& f) {
    s.Succeeded(0, 0);
    f.SetState(1002, SlurmState::kRunning);
  });
  s.slurm.OnQueue(2, [&](FakeSlurmCli&) { s.Succeeded(1, 2); });
  EXPECT_EQ(s.SubmitAndWatch(), 0);
  const std::string out = s.Output();
  EXPECT_NE(out.find("\x1b[2Kcanary (job 1001) [####################] pending 0, running 0, done 1"),
            std::string::npos) << out;
  EXPECT_NE(out.find("\x1b[2Kbucket:a (job 1002) [>>>>>>>>>>>>>>>>>>>>] pending 0, running 2, done 0, failed 0, "
                     "cancelled 0, elapsed 0s"),
            std::string::npos) << out;
  EXPECT_NE(out.find("\x1b[2A"), std::string::npos) << out;  // the second look redraws both lines
}

TEST(SweepDriver, ProgressCountsAndTimes) {
  LoadedSweep l;
  auto entry = [&](const std::string& job, EntryState st, std::optional<double> start, std::optional<double> end) {
    EntryRecord e;
    e.index = static_cast<int64_t>(l.entries.size());
    e.job_key = job;
    e.state = st;
    e.started_at = start;
    e.ended_at = end;
    l.entries.push_back(e);
  };
  entry("bucket:a", EntryState::kSucceeded, 100, 130);
  entry("bucket:a", EntryState::kFailed, 90, 95);
  entry("bucket:a", EntryState::kFailed, 110, 120);
  entry("bucket:a", EntryState::kRunning, 120, std::nullopt);
  entry("bucket:b", EntryState::kSkipped, std::nullopt, std::nullopt);
  entry("bucket:b", EntryState::kPending, std::nullopt, std::nullopt);
  const auto p = ProgressByJob(l);
  const JobProgress& a = p.at("bucket:a");
  EXPECT_EQ(a.counts.succeeded, 1);
  EXPECT_EQ(a.counts.failed, 2);
  EXPECT_EQ(a.counts.running, 1);
  EXPECT_EQ(a.first_failed, 1);
  EXPECT_EQ(a.first_start, 90);
  EXPECT_EQ(a.done_seconds, 30);
  EXPECT_EQ(CountsText(p.at("bucket:b").counts), "pending 1, running 0, done 0, failed 0, cancelled 1");
  EXPECT_EQ(CountEntries(l).total(), 6);
  EXPECT_EQ(DurationText(59), "59s");
  EXPECT_EQ(DurationText(185), "3m05s");
  EXPECT_EQ(DurationText(7620), "2h07m");
}

// ---- the canary and fail-fast rules ---------------------------------------------------

// Under fail-fast a failed entry stops every array of its own bucket (a
// bucket over MaxArraySize has several) and no other.
TEST(SweepDriver, FailFastCancelsTheFailedBucketsArraysOnly) {
  Sweep s({{"bucket:a", 2}, {"bucket:a#2", 2}, {"bucket:b", 2}});
  s.slurm.OnQueue(1, [](FakeSlurmCli& f) {
    for (int64_t job : {1001, 1002, 1003}) f.SetTaskState(job, 0, SlurmState::kRunning);
  });
  s.slurm.OnQueue(2, [](FakeSlurmCli& f) { f.SetTaskState(1001, 0, SlurmState::kFailed); });
  s.slurm.OnQueue(3, [&](FakeSlurmCli&) { s.Succeeded(4, 5); });
  EXPECT_EQ(s.SubmitAndWatch(), 1);
  EXPECT_EQ(s.slurm.cancels(), (std::vector<std::vector<std::string>>{{"1001"}, {"1002"}}));
  EXPECT_EQ(s.slurm.StateOf(1002, 0), SlurmState::kCancelled);
  EXPECT_EQ(s.slurm.StateOf(1003, 1), SlurmState::kPending);  // bucket b: never cancelled
  const LoadedSweep l = s.Load();
  EXPECT_EQ(s.Entry(l, 0).state, EntryState::kFailed);
  EXPECT_EQ(s.Entry(l, 0).failure_reason, "Slurm ended the job: FAILED");
  EXPECT_EQ(s.Entry(l, 1).state, EntryState::kCancelled);
  EXPECT_EQ(s.Entry(l, 1).failure_reason, "fail-fast: entry 0 of bucket a failed");
  EXPECT_EQ(s.Entry(l, 5).state, EntryState::kSucceeded);
  EXPECT_EQ(l.FindJob("bucket:a#2")->state, JobState::kCancelled);
  EXPECT_EQ(l.FindJob("bucket:b")->state, JobState::kSubmitted);
  EXPECT_EQ(l.sweep.state, SweepState::kFailed);
  EXPECT_NE(s.Output().find("sweep " + s.id + ": cancelled bucket:a#2 (job 1002): fail-fast: entry 0 of bucket a failed\n"),
            std::string::npos) << s.Output();
}

TEST(SweepDriver, WithoutFailFastTheOtherEntriesRunOn) {
  Sweep s({{"bucket:a", 3}}, /*fail_fast=*/false);
  s.slurm.OnQueue(1, [](FakeSlurmCli& f) { f.SetTaskState(1001, 0, SlurmState::kTimeout); });
  s.slurm.OnQueue(2, [&](FakeSlurmCli&) { s.Succeeded(1, 2); });
  EXPECT_EQ(s.SubmitAndWatch(), 1);
  EXPECT_TRUE(s.slurm.cancels().empty());
  EXPECT_NE(s.Output().find("done 2, failed 1, cancelled 0. Results"), std::string::npos) << s.Output();
}

// A failed canary cancels its dependents explicitly, and tasks Slurm says
// can never start are cancelled: nothing is left pending.
TEST(SweepDriver, AFailedCanaryCancelsEveryArrayAfterIt) {
  Sweep s({{"canary", 1}, {"bucket:a", 2}, {"bucket:b", 1}});
  s.slurm.OnQueue(2, [](FakeSlurmCli& f) {
    f.SetState(1001, SlurmState::kCancelled);
    f.SetState(1002, SlurmState::kPending, "DependencyNeverSatisfied");
  });
  EXPECT_EQ(s.SubmitAndWatch(), 1);
  const auto& c = s.slurm.cancels();
  EXPECT_NE(std::find(c.begin(), c.end(), std::vector<std::string>{"1002_1"}), c.end());
  EXPECT_NE(std::find(c.begin(), c.end(), std::vector<std::string>{"1003"}), c.end());
  for (int64_t job : {1002, 1003}) EXPECT_EQ(s.slurm.StateOf(job, 0), SlurmState::kCancelled) << job;
  const LoadedSweep l = s.Load();
  EXPECT_EQ(CountEntries(l).pending + CountEntries(l).running, 0);
  EXPECT_EQ(s.Entry(l, 3).failure_reason, "the canary failed");
  EXPECT_EQ(l.sweep.state, SweepState::kCancelled);
  EXPECT_NE(s.Output().find("cancelled bucket:b (job 1003): the canary failed"), std::string::npos) << s.Output();
}

// A task gone from the queue without a status.json: slurmctld forgot it or
// it died first. After six looks it is given up: cancelled, or failed when
// it had started (a status.json saying running).
TEST(SweepDriver, AnEntryThatLeftTheQueueWithoutAResultIsGivenUp) {
  Sweep s({{"bucket:a", 2}}, /*fail_fast=*/false);
  s.slurm.OnQueue(1, [&](FakeSlurmCli& f) {
    s.Wrote(1, "running", s.clock, 0);
    f.Forget(1001);
  });
  EXPECT_EQ(s.SubmitAndWatch(), 1);
  EXPECT_EQ(s.slurm.queue_calls(), 6);
  const LoadedSweep l = s.Load();
  EXPECT_EQ(s.Entry(l, 0).state, EntryState::kCancelled);
  EXPECT_EQ(s.Entry(l, 1).state, EntryState::kFailed);
  EXPECT_EQ(s.Entry(l, 1).failure_reason, "the job left the queue without a result");
}

// A failing squeue changes nothing; the next look that reads it records
// what happened meanwhile.
TEST(SweepDriver, AFailedSqueueIsReadAgainAtTheNextLook) {
  Sweep s({{"bucket:a", 1}});
  s.slurm.OnQueue(1, [](FakeSlurmCli& f) {
    f.FailQueue("squeue: error: slurm_receive_msg: Socket timed out on send/recv operation");
    f.SetTaskState(1001, 0, SlurmState::kFailed);
  });
  s.slurm.OnQueue(4, [](FakeSlurmCli& f) { f.FailQueue(std::nullopt); });
  EXPECT_EQ(s.SubmitAndWatch(), 1);
  EXPECT_EQ(s.slurm.queue_calls(), 4);
  EXPECT_EQ(s.Entry(s.Load(), 0).failure_reason, "Slurm ended the job: FAILED");
}

// ---- Ctrl-C and resume ----------------------------------------------------------------------

TEST(SweepDriver, CtrlCThenCancelStopsEveryJobAndRecordsIt) {
  Sweep s({{"canary", 1}, {"bucket:a", 2}});
  s.ctrl_c_at = 1;
  s.cancel_on_ctrl_c = true;
  s.slurm.OnQueue(1, [](FakeSlurmCli& f) { f.SetState(1001, SlurmState::kRunning); });
  EXPECT_EQ(s.SubmitAndWatch(), 130);
  EXPECT_TRUE(s.asked);
  EXPECT_EQ(s.slurm.cancels(), (std::vector<std::vector<std::string>>{{"1001"}, {"1002"}}));
  EXPECT_EQ(s.slurm.StateOf(1001), SlurmState::kCancelled);
  EXPECT_EQ(s.slurm.StateOf(1002, 1), SlurmState::kCancelled);
  const LoadedSweep l = s.Load();
  EXPECT_EQ(l.sweep.state, SweepState::kCancelled);
  for (const EntryRecord& e : l.entries) {
    EXPECT_EQ(e.state, EntryState::kCancelled) << e.index;
    EXPECT_EQ(e.failure_reason, "cancelled by the user (Ctrl-C)") << e.index;
  }
  EXPECT_NE(s.Output().find("sweep " + s.id + " cancelled\n"), std::string::npos) << s.Output();
}

// Ctrl-C, "leave it running": nothing cancelled; a resumed submitter
// watches it to the end without submitting anything again.
TEST(SweepDriver, CtrlCThenLeaveItRunningAndResumeTheWatch) {
  Sweep s({{"canary", 1}, {"bucket:a", 2}});
  s.ctrl_c_at = 1;
  EXPECT_EQ(s.SubmitAndWatch(), 130);
  EXPECT_TRUE(s.slurm.cancels().empty());
  EXPECT_NE(s.Output().find("sweep " + s.id + " left running; watch again with: ixsubmit sweep --resume " + s.id),
            std::string::npos) << s.Output();
  s.ctrl_c_at = -1;
  s.slurm.OnQueue(2, [&](FakeSlurmCli&) { s.Succeeded(0, 2); });
  SweepDriver resumed = s.Driver();
  ASSERT_TRUE(resumed.Submit().ok());
  EXPECT_EQ(resumed.Watch(), 0);
  EXPECT_EQ(s.slurm.submissions().size(), 2u);
  EXPECT_EQ(s.Load().sweep.state, SweepState::kSucceeded);
}

}  // namespace
}  // namespace ix
