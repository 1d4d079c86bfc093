#include "submitter/sweep/sweep_submit.h"

#include <gtest/gtest.h>

#include <map>

#include "tests/support/test.h"

namespace ix {
namespace {

// A Slurm that remembers jobs by name; sbatch can be made to lose its
// answer (a timeout after slurmctld took the job) or to lose the job too.
class FakeSlurm : public SlurmCli {
 public:
  enum class Next { kOk, kLostAnswer, kLostJob, kReject };
  Next next = Next::kOk;
  int submits = 0, lookups = 0;
  std::map<std::string, int64_t> by_name;

  Result<int64_t> Submit(const std::vector<std::string>& args, const std::string&) override {
    ++submits;
    std::string name;
    for (const std::string& a : args) {
      if (a.rfind("--job-name=", 0) == 0) name = a.substr(11);
    }
    const Next n = std::exchange(next, Next::kOk);
    if (n == Next::kReject) return Error{"sbatch rejected x (exit status 1): bad partition"};
    if (n == Next::kLostJob) return Error{std::string("sbatch x: timed out ") + kSubmitOutcomeUnknown};
    const int64_t id = 100 + submits;
    by_name[name] = id;
    if (n == Next::kLostAnswer) return Error{std::string("sbatch x: timed out ") + kSubmitOutcomeUnknown};
    return id;
  }
  Status Cancel(const std::vector<std::string>&, std::optional<SlurmState>) override { return Ok{}; }
  Result<std::vector<QueueTask>> Queue(const std::vector<int64_t>&) override { return std::vector<QueueTask>{}; }
  Result<std::vector<JobInfo>> ShowJob(int64_t) override { return std::vector<JobInfo>{}; }
  Result<std::vector<int64_t>> FindJobsByName(const std::string& name) override {
    ++lookups;
    if (!by_name.count(name)) return std::vector<int64_t>{};
    return std::vector<int64_t>{by_name[name]};
  }
};

struct Fixture {
  test::TempDir dir{"ix-sweep-submit"};
  SweepManifest m;
  std::optional<SweepStore> store;
  std::string id = "sw-20260101-000000-0001";

  Fixture() {
    m.sweep_id = id;
    m.sweep_dir = dir.path();
    PlannedJob canary;
    canary.key = "canary";
    canary.canary = true;
    canary.entries = {0};
    canary.gpus = 4;
    PlannedEntry e;
    e.job_key = "canary";
    e.config_key = "k";
    m.plan.jobs = {canary};
    m.plan.entries = {e};
    store.emplace(std::move(SweepStore::Open(dir.path() + "/ix.db").value()));
    NewSweep ns;
    ns.id = id;
    ns.sweep_dir = dir.path();
    NewJob nj;
    nj.key = "canary";
    nj.kind = JobKind::kCanary;
    nj.job_name = JobName(m, canary);
    ns.jobs = {nj};
    NewEntry ne;
    ne.job_key = "canary";
    ns.entries = {ne};
    EXPECT_TRUE(store->CreateSweep(ns).ok());
  }
  JobState State() { return store->LoadSweep(id).value().jobs[0].state; }
};

// sbatch timed out after slurmctld took the job: it is found by name and
// recorded, never submitted a second time.
TEST(SubmitPending, ALostAnswerIsFoundByName) {
  Fixture f;
  FakeSlurm slurm;
  slurm.next = FakeSlurm::Next::kLostAnswer;
  ASSERT_TRUE(SubmitPending(*f.store, f.id, f.m, slurm).ok());
  EXPECT_EQ(slurm.submits, 1);
  EXPECT_EQ(f.State(), JobState::kSubmitted);
  EXPECT_EQ(*f.store->LoadSweep(f.id).value().jobs[0].slurm_job_id, 101);
}

// sbatch timed out and no job has the name yet: the job stays
// `submitting`, the submitter stops; a resume looks again first, and only
// submits when the name is still unknown.
TEST(SubmitPending, AnUnknownOutcomeStaysSubmittingUntilALookup) {
  Fixture f;
  FakeSlurm slurm;
  slurm.next = FakeSlurm::Next::kLostJob;
  Status s = SubmitPending(*f.store, f.id, f.m, slurm);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("stays 'submitting'"), std::string::npos) << s.error().message;
  EXPECT_EQ(f.State(), JobState::kSubmitting);
  // Meanwhile slurmctld did make it: the resume finds it and submits nothing.
  slurm.by_name[f.store->LoadSweep(f.id).value().jobs[0].job_name] = 555;
  ASSERT_TRUE(SubmitPending(*f.store, f.id, f.m, slurm).ok());
  EXPECT_EQ(slurm.submits, 1);
  EXPECT_EQ(*f.store->LoadSweep(f.id).value().jobs[0].slurm_job_id, 555);
}

TEST(SubmitPending, AResumeSubmitsAgainOnlyWhenTheNameIsUnknown) {
  Fixture f;
  FakeSlurm slurm;
  slurm.next = FakeSlurm::Next::kLostJob;
  ASSERT_FALSE(SubmitPending(*f.store, f.id, f.m, slurm).ok());
  const int lookups = slurm.lookups;
  ASSERT_TRUE(SubmitPending(*f.store, f.id, f.m, slurm).ok());
  EXPECT_GT(slurm.lookups, lookups);
  EXPECT_EQ(slurm.submits, 2);
  EXPECT_EQ(f.State(), JobState::kSubmitted);
}

// A clean rejection proves sbatch made nothing: back to planned, no lookup.
TEST(SubmitPending, ARejectionGoesBackToPlanned) {
  Fixture f;
  FakeSlurm slurm;
  slurm.next = FakeSlurm::Next::kReject;
  ASSERT_FALSE(SubmitPending(*f.store, f.id, f.m, slurm).ok());
  EXPECT_EQ(f.State(), JobState::kPlanned);
  EXPECT_EQ(slurm.lookups, 0);
}

}  // namespace
}  // namespace ix
