#include "submitter/sweep/sweep_submit.h"

#include <gtest/gtest.h>

#include "tests/support/fake_slurm_cli.h"
#include "tests/support/test.h"

namespace ix {
namespace {

using test::FakeSlurmCli;
using Outcome = FakeSlurmCli::SbatchOutcome;

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
  FakeSlurmCli slurm;
  slurm.NextSubmit(Outcome::kLostAnswer);
  ASSERT_TRUE(SubmitPending(*f.store, f.id, f.m, slurm).ok());
  ASSERT_EQ(slurm.submissions().size(), 1u);
  EXPECT_EQ(f.State(), JobState::kSubmitted);
  EXPECT_EQ(f.store->LoadSweep(f.id).value().jobs[0].slurm_job_id, slurm.submissions()[0].job_id);
}

// sbatch timed out and no job has the name yet: the job stays
// `submitting`, the submitter stops; a resume looks again first, and only
// submits when the name is still unknown.
TEST(SubmitPending, AnUnknownOutcomeStaysSubmittingUntilALookup) {
  Fixture f;
  FakeSlurmCli slurm;
  slurm.NextSubmit(Outcome::kLostJob);
  Status s = SubmitPending(*f.store, f.id, f.m, slurm);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("stays 'submitting'"), std::string::npos) << s.error().message;
  EXPECT_EQ(f.State(), JobState::kSubmitting);
  // Meanwhile slurmctld did make it: the resume finds it and submits nothing.
  const int64_t made = slurm.AddJob(f.store->LoadSweep(f.id).value().jobs[0].job_name);
  ASSERT_TRUE(SubmitPending(*f.store, f.id, f.m, slurm).ok());
  EXPECT_EQ(slurm.submissions().size(), 1u);
  EXPECT_EQ(*f.store->LoadSweep(f.id).value().jobs[0].slurm_job_id, made);
}

TEST(SubmitPending, AResumeSubmitsAgainOnlyWhenTheNameIsUnknown) {
  Fixture f;
  FakeSlurmCli slurm;
  slurm.NextSubmit(Outcome::kLostJob);
  ASSERT_FALSE(SubmitPending(*f.store, f.id, f.m, slurm).ok());
  const int lookups = slurm.lookups();
  ASSERT_TRUE(SubmitPending(*f.store, f.id, f.m, slurm).ok());
  EXPECT_GT(slurm.lookups(), lookups);
  EXPECT_EQ(slurm.submissions().size(), 2u);
  EXPECT_EQ(f.State(), JobState::kSubmitted);
}

// A clean rejection proves sbatch made nothing: back to planned, no lookup.
TEST(SubmitPending, ARejectionGoesBackToPlanned) {
  Fixture f;
  FakeSlurmCli slurm;
  slurm.NextSubmit(Outcome::kReject);
  ASSERT_FALSE(SubmitPending(*f.store, f.id, f.m, slurm).ok());
  EXPECT_EQ(f.State(), JobState::kPlanned);
  EXPECT_EQ(slurm.lookups(), 0);
}

}  // namespace
}  // namespace ix
