#include "submitter/sweep/sweep_store.h"

#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "tests/support/test.h"

namespace ix {
namespace {

using test::TempDir;

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// A canary and one bucket array of `n` entries, as the submitter plans them.
NewSweep SmallSweep(int n = 4) {
  NewSweep s;
  s.mode = SweepMode::kFullSweepFailFast;
  s.sweep_dir = "/work/sweeps/one";
  s.argv = {"ixsubmit", "sweep", "full-sweep-fail-fast", "--config-keys", "dsv41flash-*-b300-*", "quote\"d"};
  s.jobs.push_back({"canary", JobKind::kCanary, "ix-canary", "/work/sweeps/one/canary.sh", 1, 0, ""});
  s.jobs.push_back({"bucket:8k1k", JobKind::kArray, "ix-8k1k", "/work/sweeps/one/8k1k.sh", n, 2, "canary"});
  s.entries.push_back({0, "canary", std::nullopt, "1k1k", "dsv41flash-fp4-b300-vllm", "tp4", "dsv4", 1, "{\"conc\":1}"});
  for (int i = 0; i < n; ++i) {
    const int64_t conc = int64_t{1} << (i % 8);  // 1, 2, 4, ... 128, 1, ...
    s.entries.push_back({i + 1, "bucket:8k1k", i, "8k1k", "dsv41flash-fp4-b300-vllm", "tp4", "dsv4", conc,
                         "{\"conc\":" + std::to_string(conc) + "}"});
  }
  return s;
}

TEST(SweepStore, CreateReopenAndLoad) {
  TempDir d("ix-sweep-store-test");
  const std::string path = d.path() + "/ix.db";
  std::string id;
  {
    Result<SweepStore> s = SweepStore::Open(path);
    ASSERT_TRUE(s.ok()) << s.error().message;
    Result<std::string> made = s.value().CreateSweep(SmallSweep());
    ASSERT_TRUE(made.ok()) << made.error().message;
    id = made.value();
  }
  // sw-YYYYMMDD-HHMMSS-xxxx
  ASSERT_EQ(id.size(), 23u) << id;
  EXPECT_EQ(id.substr(0, 3), "sw-");
  EXPECT_EQ(id[11], '-');
  EXPECT_EQ(id[18], '-');

  Result<SweepStore> s = SweepStore::Open(path);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s.value().LatestSweepId().value(), id);
  Result<LoadedSweep> l = s.value().LoadSweep(id);
  ASSERT_TRUE(l.ok()) << l.error().message;
  const LoadedSweep& sw = l.value();
  EXPECT_EQ(sw.sweep.mode, SweepMode::kFullSweepFailFast);
  EXPECT_EQ(sw.sweep.state, SweepState::kSubmitting);
  EXPECT_EQ(sw.sweep.sweep_dir, "/work/sweeps/one");
  EXPECT_EQ(sw.sweep.argv, SmallSweep().argv);
  EXPECT_GT(sw.sweep.created_at, 1.7e9);
  ASSERT_EQ(sw.jobs.size(), 2u);
  EXPECT_EQ(sw.jobs[0].key, "canary");
  EXPECT_EQ(sw.jobs[0].kind, JobKind::kCanary);
  EXPECT_EQ(sw.jobs[1].key, "bucket:8k1k");
  EXPECT_EQ(sw.jobs[1].array_size, 4);
  EXPECT_EQ(sw.jobs[1].throttle, 2);
  EXPECT_EQ(sw.jobs[1].depends_on, "canary");
  EXPECT_EQ(sw.jobs[1].state, JobState::kPlanned);
  EXPECT_FALSE(sw.jobs[1].slurm_job_id);
  ASSERT_NE(sw.FindJob("canary"), nullptr);
  EXPECT_EQ(sw.FindJob("nope"), nullptr);
  ASSERT_EQ(sw.entries.size(), 5u);
  EXPECT_EQ(sw.entries[0].job_key, "canary");
  EXPECT_FALSE(sw.entries[0].array_index);
  EXPECT_EQ(sw.entries[3].index, 3);
  EXPECT_EQ(sw.entries[3].array_index, 2);
  EXPECT_EQ(sw.entries[3].conc, 4);
  EXPECT_EQ(sw.entries[3].entry_json, "{\"conc\":4}");
  EXPECT_EQ(sw.entries[3].state, EntryState::kPending);
  EXPECT_EQ(sw.entries[3].slurm_task_id, "");

  Result<std::vector<SweepSummary>> list = s.value().ListSweeps();
  ASSERT_TRUE(list.ok()) << list.error().message;
  ASSERT_EQ(list.value().size(), 1u);
  EXPECT_EQ(list.value()[0].sweep.id, id);
  EXPECT_EQ(list.value()[0].counts.pending, 5);
  EXPECT_EQ(list.value()[0].counts.total(), 5);

  ASSERT_TRUE(s.value().SetSweepState(id, SweepState::kRunning).ok());
  EXPECT_EQ(s.value().LoadSweep(id).value().sweep.state, SweepState::kRunning);
}

TEST(SweepStore, UnknownSweepListsTheRecentOnes) {
  TempDir d("ix-sweep-store-test");
  Result<SweepStore> s = SweepStore::Open(d.path() + "/ix.db");
  ASSERT_TRUE(s.ok());
  Result<LoadedSweep> none = s.value().LoadSweep("sw-nope");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().message, d.path() + "/ix.db: no sweep 'sw-nope'; no sweeps are recorded here yet");
  EXPECT_TRUE(Contains(s.value().LatestSweepId().error().message, "no sweeps are recorded here yet"));
  for (const char* id : {"sw-a", "sw-b", "sw-c"}) {
    NewSweep n = SmallSweep(1);
    n.id = id;
    ASSERT_TRUE(s.value().CreateSweep(n).ok());
  }
  const std::string msg = s.value().LoadSweep("sw-x").error().message;
  EXPECT_TRUE(Contains(msg, "no sweep 'sw-x'; the most recent are: sw-c, sw-b, sw-a")) << msg;
  EXPECT_TRUE(Contains(s.value().SetSweepState("sw-x", SweepState::kFailed).error().message, "the most recent are"));
  EXPECT_TRUE(Contains(s.value().JobsNeedingSubmission("sw-x").error().message, "no sweep 'sw-x'"));
  // Same id twice is refused, and does not touch the first.
  NewSweep again = SmallSweep(2);
  again.id = "sw-a";
  Result<std::string> dup = s.value().CreateSweep(again);
  ASSERT_FALSE(dup.ok());
  EXPECT_TRUE(Contains(dup.error().message, "cannot create sweep sw-a")) << dup.error().message;
  EXPECT_EQ(s.value().LoadSweep("sw-a").value().entries.size(), 2u);
}

TEST(SweepStore, BadPlansAreRefusedWholesale) {
  TempDir d("ix-sweep-store-test");
  Result<SweepStore> s = SweepStore::Open(d.path() + "/ix.db");
  ASSERT_TRUE(s.ok());
  struct Case {
    const char* want;
    void (*spoil)(NewSweep&);
  };
  const Case cases[] = {
      {"depends on 'later', which is not planned before it", [](NewSweep& n) { n.jobs[1].depends_on = "later"; }},
      {"array job 'bucket:8k1k' needs an array index in [0, 4), not 4", [](NewSweep& n) { n.entries[1].array_index = 4; }},
      {"no job 'ghost' in the sweep", [](NewSweep& n) { n.entries[2].job_key = "ghost"; }},
      {"is not an array; no array index", [](NewSweep& n) { n.entries[0].array_index = 0; }},
      {"the sweep already has a job with this key", [](NewSweep& n) { n.jobs.push_back(n.jobs[0]); }},
      {"UNIQUE constraint failed", [](NewSweep& n) { n.entries[2].index = 1; }},
      {"UNIQUE constraint failed", [](NewSweep& n) { n.entries[2].array_index = 0; }},
  };
  for (const Case& c : cases) {
    NewSweep n = SmallSweep();
    c.spoil(n);
    Result<std::string> r = s.value().CreateSweep(n);
    ASSERT_FALSE(r.ok()) << c.want;
    EXPECT_TRUE(Contains(r.error().message, c.want)) << r.error().message;
  }
  // Nothing of the failed ones was left behind.
  EXPECT_TRUE(s.value().ListSweeps().value().empty());
}

TEST(SweepStore, AddJobsAndEntriesLater) {
  TempDir d("ix-sweep-store-test");
  Result<SweepStore> s = SweepStore::Open(d.path() + "/ix.db");
  const std::string id = s.value().CreateSweep(SmallSweep(2)).value();
  ASSERT_TRUE(s.value()
                  .AddJobs(id, {{"bucket:agentic", JobKind::kArray, "ix-agentic", "/s/agentic.sh", 2, 0, "canary"}})
                  .ok());
  ASSERT_TRUE(s.value()
                  .AddEntries(id, {{10, "bucket:agentic", 0, "agentic", "k", "dep4", "r", 32, "{}"},
                                   {11, "bucket:agentic", 1, "agentic", "k", "dep4", "r", 64, "{}"}})
                  .ok());
  // One bad entry: none of the batch is added.
  Status bad = s.value().AddEntries(id, {{12, "bucket:agentic", 1, "agentic", "k", "dep4", "r", 128, "{}"},
                                         {13, "bucket:agentic", 5, "agentic", "k", "dep4", "r", 128, "{}"}});
  ASSERT_FALSE(bad.ok());
  LoadedSweep l = s.value().LoadSweep(id).value();
  ASSERT_EQ(l.jobs.size(), 3u);
  EXPECT_EQ(l.jobs[2].key, "bucket:agentic");
  EXPECT_EQ(l.jobs[2].seq, 2);
  EXPECT_EQ(l.entries.size(), 5u);
  EXPECT_TRUE(Contains(s.value().AddJobs(id, {{"canary", JobKind::kCanary, "x", "x", 1, 0, ""}}).error().message,
                       "already has a job"));
}

TEST(SweepStore, TwoPhaseSubmissionNeverSubmitsTwice) {
  TempDir d("ix-sweep-store-test");
  const std::string path = d.path() + "/ix.db";
  std::string id;
  {
    Result<SweepStore> s = SweepStore::Open(path);
    id = s.value().CreateSweep(SmallSweep()).value();
    // The bucket cannot go before the canary has an id.
    EXPECT_TRUE(Contains(s.value().MarkSubmitting(id, "bucket:8k1k").error().message,
                         "depends on job 'canary', which has no Slurm job id yet"));
    Result<JobRecord> c = s.value().MarkSubmitting(id, "canary");
    ASSERT_TRUE(c.ok()) << c.error().message;
    EXPECT_EQ(c.value().state, JobState::kSubmitting);
    EXPECT_EQ(c.value().submit_attempts, 1);
    EXPECT_EQ(c.value().submit_token, id + "/canary/1");
    // ... and here the submitter dies between sbatch and MarkSubmitted.
  }
  Result<SweepStore> s = SweepStore::Open(path);
  Result<std::vector<JobRecord>> need = s.value().JobsNeedingSubmission(id);
  ASSERT_TRUE(need.ok()) << need.error().message;
  ASSERT_EQ(need.value().size(), 2u);
  EXPECT_EQ(need.value()[0].key, "canary");
  EXPECT_TRUE(need.value()[0].NeedsLookup());
  EXPECT_EQ(need.value()[0].job_name, "ix-canary");
  EXPECT_FALSE(need.value()[1].NeedsLookup());
  // A second MarkSubmitting is refused until the lookup is resolved.
  Result<JobRecord> again = s.value().MarkSubmitting(id, "canary");
  ASSERT_FALSE(again.ok());
  EXPECT_TRUE(Contains(again.error().message, "look it up by its job name 'ix-canary' first")) << again.error().message;

  // The lookup found nothing: abandon, submit again.
  ASSERT_TRUE(s.value().AbandonSubmission(id, "canary").ok());
  Result<JobRecord> second = s.value().MarkSubmitting(id, "canary");
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second.value().submit_attempts, 2);
  EXPECT_EQ(second.value().submit_token, id + "/canary/2");
  ASSERT_TRUE(s.value().MarkSubmitted(id, "canary", 1234).ok());
  ASSERT_TRUE(s.value().MarkSubmitted(id, "canary", 1234).ok());  // a repeat is a no-op
  EXPECT_TRUE(Contains(s.value().MarkSubmitted(id, "canary", 99).error().message, "already recorded as Slurm job 1234"));
  EXPECT_TRUE(Contains(s.value().MarkSubmitting(id, "canary").error().message, "refusing to submit it twice"));
  EXPECT_TRUE(Contains(s.value().MarkSubmitted(id, "bucket:8k1k", 1235).error().message, "call MarkSubmitting before"));

  ASSERT_TRUE(s.value().MarkSubmitting(id, "bucket:8k1k").ok());
  ASSERT_TRUE(s.value().MarkSubmitted(id, "bucket:8k1k", 1235).ok());
  EXPECT_TRUE(s.value().JobsNeedingSubmission(id).value().empty());
  LoadedSweep l = s.value().LoadSweep(id).value();
  EXPECT_EQ(l.jobs[0].slurm_job_id, 1234);
  EXPECT_EQ(l.jobs[1].slurm_job_id, 1235);
  EXPECT_EQ(l.jobs[1].state, JobState::kSubmitted);
  EXPECT_TRUE(l.jobs[1].submitted_at.has_value());
  EXPECT_EQ(l.entries[0].slurm_task_id, "1234");
  EXPECT_EQ(l.entries[1].slurm_task_id, "1235_0");
  EXPECT_EQ(l.entries[4].slurm_task_id, "1235_3");
  EXPECT_TRUE(Contains(s.value().MarkSubmitting(id, "nope").error().message,
                       "has no job 'nope' (its jobs: bucket:8k1k, canary)"));
}

TEST(SweepStore, FinalStatesAreProtected) {
  TempDir d("ix-sweep-store-test");
  Result<SweepStore> s = SweepStore::Open(d.path() + "/ix.db");
  const std::string id = s.value().CreateSweep(SmallSweep()).value();
  EntryUpdate run{1, EntryState::kRunning, "7_0", 100.0, {}, {}, {}, {}, {}};
  EXPECT_TRUE(s.value().UpdateEntryState(id, run).value());
  EXPECT_FALSE(s.value().UpdateEntryState(id, run).value());  // a repeat changes nothing
  EntryUpdate fail{1, EntryState::kFailed, {}, {}, 130.0, 1, "engine exited with status 1", "engine", {}};
  EXPECT_TRUE(s.value().UpdateEntryState(id, fail).value());
  EntryRecord e = s.value().LoadSweep(id).value().entries[1];
  EXPECT_EQ(e.state, EntryState::kFailed);
  EXPECT_EQ(e.started_at, 100.0);
  EXPECT_EQ(e.ended_at, 130.0);
  EXPECT_EQ(e.exit_code, 1);
  EXPECT_EQ(e.failure_reason, "engine exited with status 1");
  EXPECT_EQ(e.failure_process, "engine");
  EXPECT_EQ(e.slurm_task_id, "7_0");

  // fail-fast cancels the array: squeue now says CANCELLED for the failed task too.
  EntryUpdate cancel{1, EntryState::kCancelled, {}, {}, {}, {}, {}, {}, {}};
  Result<bool> refused = s.value().UpdateEntryState(id, cancel);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(Contains(refused.error().message, "entry 1 is already failed; refusing to make it cancelled"))
      << refused.error().message;
  EXPECT_TRUE(Contains(refused.error().message, d.path() + "/ix.db: ")) << refused.error().message;
  EXPECT_FALSE(s.value().UpdateEntryState(id, cancel, FinalEntries::kKeep).value());
  EXPECT_EQ(s.value().LoadSweep(id).value().entries[1].state, EntryState::kFailed);

  // A batch with one refused update writes none of it.
  EntryUpdate ok2{2, EntryState::kSucceeded, {}, {}, 140.0, 0, {}, {}, "/r/2.json"};
  Result<int64_t> batch = s.value().UpdateEntryStates(id, {ok2, cancel});
  ASSERT_FALSE(batch.ok());
  EXPECT_EQ(s.value().LoadSweep(id).value().entries[2].state, EntryState::kPending);
  EXPECT_EQ(s.value().UpdateEntryStates(id, {ok2, cancel}, FinalEntries::kKeep).value(), 1);
  EXPECT_EQ(s.value().LoadSweep(id).value().entries[2].result_path, "/r/2.json");

  // Reopened explicitly for a re-run: end, exit code and failure are cleared.
  EntryUpdate rerun{1, EntryState::kPending, {}, {}, {}, {}, {}, {}, {}};
  EXPECT_TRUE(s.value().UpdateEntryState(id, rerun, FinalEntries::kReopen).value());
  e = s.value().LoadSweep(id).value().entries[1];
  EXPECT_EQ(e.state, EntryState::kPending);
  EXPECT_FALSE(e.ended_at);
  EXPECT_FALSE(e.exit_code);
  EXPECT_EQ(e.failure_reason, "");

  EXPECT_TRUE(Contains(s.value().UpdateEntryState(id, {99, EntryState::kRunning, {}, {}, {}, {}, {}, {}, {}})
                           .error()
                           .message,
                       "has no entry 99"));
  SweepSummary sum = s.value().ListSweeps().value()[0];
  EXPECT_EQ(sum.counts.succeeded, 1);
  EXPECT_EQ(sum.counts.pending, 4);
}

TEST(SweepStore, CancellingAJobCancelsOnlyItsUnfinishedEntries) {
  TempDir d("ix-sweep-store-test");
  Result<SweepStore> s = SweepStore::Open(d.path() + "/ix.db");
  const std::string id = s.value().CreateSweep(SmallSweep()).value();
  ASSERT_TRUE(s.value().UpdateEntryState(id, {1, EntryState::kSucceeded, {}, {}, 5.0, 0, {}, {}, {}}).ok());
  ASSERT_TRUE(s.value().UpdateEntryState(id, {2, EntryState::kFailed, {}, {}, 6.0, 1, "boom", {}, {}}).ok());
  ASSERT_TRUE(s.value().UpdateEntryState(id, {3, EntryState::kRunning, {}, 4.0, {}, {}, {}, {}, {}}).ok());
  Result<int64_t> n = s.value().MarkJobCancelled(id, "bucket:8k1k", "fail-fast: entry 2 failed");
  ASSERT_TRUE(n.ok()) << n.error().message;
  EXPECT_EQ(n.value(), 2);  // entries 3 (running) and 4 (pending)
  LoadedSweep l = s.value().LoadSweep(id).value();
  EXPECT_EQ(l.jobs[1].state, JobState::kCancelled);
  EXPECT_EQ(l.jobs[0].state, JobState::kPlanned);
  EXPECT_EQ(l.entries[0].state, EntryState::kPending);  // the canary's entry is another job's
  EXPECT_EQ(l.entries[1].state, EntryState::kSucceeded);
  EXPECT_EQ(l.entries[2].failure_reason, "boom");
  EXPECT_EQ(l.entries[3].state, EntryState::kCancelled);
  EXPECT_EQ(l.entries[3].failure_reason, "fail-fast: entry 2 failed");
  EXPECT_TRUE(l.entries[4].ended_at.has_value());
  // Job states other than through the two-phase calls.
  EXPECT_TRUE(Contains(s.value().SetJobState(id, "canary", JobState::kSubmitted).error().message, "only through"));
  EXPECT_TRUE(Contains(s.value().SetJobState(id, "canary", JobState::kFinished).error().message,
                       "only a submitted job can finish"));
}

// Two processes (a watcher and `ixsubmit status`-like writer) hammer one
// database; with WAL, BEGIN IMMEDIATE and the busy timeout neither sees
// "database is locked".
TEST(SweepStore, ConcurrentProcessesDoNotSeeLockErrors) {
  TempDir d("ix-sweep-store-test");
  const std::string path = d.path() + "/ix.db";
  constexpr int kEntries = 40, kRounds = 60;
  std::string id;
  {
    Result<SweepStore> s = SweepStore::Open(path);
    id = s.value().CreateSweep(SmallSweep(kEntries)).value();
  }
  int pipes[2][2];
  std::vector<pid_t> kids;
  for (int p = 0; p < 2; ++p) {
    ASSERT_EQ(::pipe(pipes[p]), 0);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(pipes[p][0]);
      std::string err;
      Result<SweepStore> s = SweepStore::Open(path);
      if (!s) err = s.error().message;
      for (int r = 0; r < kRounds && err.empty(); ++r) {
        // Both write every entry of the array in one batch, one entry alone,
        // and read the whole sweep, each round.
        std::vector<EntryUpdate> ups;
        for (int e = 1; e <= kEntries; ++e) {
          ups.push_back({e, EntryState::kRunning, {}, static_cast<double>(r), {}, {}, {}, {}, {}});
        }
        Result<int64_t> n = s.value().UpdateEntryStates(id, ups);
        if (!n) err = n.error().message;
        Result<bool> one = s.value().UpdateEntryState(id, {1 + p, EntryState::kRunning, "t" + std::to_string(r), {}, {}, {}, {}, {}, {}});
        if (!one && err.empty()) err = one.error().message;
        Result<LoadedSweep> l = s.value().LoadSweep(id);
        if (!l && err.empty()) err = l.error().message;
      }
      (void)!::write(pipes[p][1], err.data(), err.size());
      ::_exit(err.empty() ? 0 : 1);
    }
    ::close(pipes[p][1]);
    kids.push_back(pid);
  }
  for (int p = 0; p < 2; ++p) {
    std::string err;
    char buf[512];
    ssize_t n;
    while ((n = ::read(pipes[p][0], buf, sizeof buf)) > 0) err.append(buf, static_cast<size_t>(n));
    ::close(pipes[p][0]);
    int status = 0;
    ::waitpid(kids[p], &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "process " << p << ": " << err;
    EXPECT_EQ(err, "");
  }
  Result<SweepStore> s = SweepStore::Open(path);
  LoadedSweep l = s.value().LoadSweep(id).value();
  for (int e = 1; e <= kEntries; ++e) {
    EXPECT_EQ(l.entries[e].state, EntryState::kRunning) << e;
    EXPECT_EQ(l.entries[e].started_at, kRounds - 1.0) << e;
  }
  EXPECT_EQ(l.entries[1].slurm_task_id, "t" + std::to_string(kRounds - 1));
}

}  // namespace
}  // namespace ix
