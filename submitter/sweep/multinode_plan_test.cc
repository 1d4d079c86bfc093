// Multinode entries in a sweep's plan, files and steps, from the small
// master config and recipe in tests/data/sweep-multinode.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/matrix/matrix_buckets.h"
#include "core/matrix/matrix_runners.h"
#include "submitter/sweep/sweep_container.h"
#include "submitter/sweep/sweep_files.h"
#include "submitter/sweep/sweep_plan.h"
#include "tests/support/test.h"

namespace ix {
namespace {

const std::string kData = IX_SOURCE_DIR "/tests/data/sweep-multinode";

Result<SweepPlan> PlanKeys(std::vector<std::string> keys, SweepMode mode = SweepMode::kFullSweepEnabled) {
  // The buckets' entries point into the config; the plan holds copies.
  Result<MasterConfig> c = LoadMasterConfigFiles({kData + "/master.yaml"});
  if (!c) return c.error();
  const MasterConfig& config = c.value();
  Result<RunnerConfig> r = LoadRunnerConfigFile(kData + "/runners.yaml");
  if (!r) return r.error();
  SweepOptions o;
  o.command = SweepOptions::Command::kTestConfig;
  o.config_keys = std::move(keys);
  Result<MatrixBuckets> b = GenerateBuckets(config, r.value(), o, TraitsOf(mode).trim_conc);
  if (!b) return b.error();
  return PlanSweep(mode, b.value(), kData + "/recipes");
}

bool Contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

const SkippedEntry* SkippedFor(const SweepPlan& p, const std::string& key, const std::string& path) {
  for (const SkippedEntry& s : p.skipped) {
    if (s.config_key == key && s.path == path) return &s;
  }
  return nullptr;
}

TEST(MultinodePlan, AggregatedRowsRunOnArmsAcrossNodesOneTaskPerConcurrency) {
  Result<SweepPlan> p = PlanKeys({"*"});
  ASSERT_TRUE(p) << p.error().message;
  // The canary (single-node sn), then the multinode bucket: its own array.
  ASSERT_EQ(p.value().jobs.size(), 2u);
  const PlannedJob& canary = p.value().jobs[0];
  EXPECT_TRUE(canary.canary);
  EXPECT_EQ(canary.nodes, 1);
  const PlannedJob& mn = p.value().jobs[1];
  EXPECT_EQ(mn.key, "bucket:multinode-1k1k");
  EXPECT_EQ(mn.nodes, 2);
  EXPECT_EQ(mn.gpus, 8);
  std::vector<std::pair<std::string, int64_t>> got;
  for (int64_t i : mn.entries) {
    const PlannedEntry& e = p.value().entries[static_cast<size_t>(i)];
    EXPECT_EQ(e.nodes, 2);
    EXPECT_EQ(e.gpus, 8);
    EXPECT_EQ(e.config_key, "mn-agg");
    EXPECT_TRUE(Contains(e.entry_json, "\"prefill\"")) << e.entry_json;
    got.emplace_back(e.arm, e.conc);
  }
  EXPECT_EQ(got, (std::vector<std::pair<std::string, int64_t>>{{"dep16", 32}, {"dep16", 64}, {"tp8pp2", 8}}));
}

TEST(MultinodePlan, WhatNoArmCanRunIsSkippedWithItsReason) {
  Result<SweepPlan> p = PlanKeys({"*"});
  ASSERT_TRUE(p) << p.error().message;
  ASSERT_EQ(p.value().skipped.size(), 3u);
  const SkippedEntry* disagg = SkippedFor(p.value(), "mn-disagg", "scenarios.fixed-seq-len[0].search-space[0]");
  ASSERT_NE(disagg, nullptr);
  EXPECT_TRUE(Contains(disagg->reason, "disaggregated (disagg: true")) << disagg->reason;
  EXPECT_TRUE(Contains(disagg->where, "tests/data/sweep-multinode/master.yaml:")) << disagg->where;
  EXPECT_EQ(disagg->concs, std::vector<int64_t>{64});
  const SkippedEntry* tep = SkippedFor(p.value(), "mn-agg", "scenarios.fixed-seq-len[0].search-space[2]");
  ASSERT_NE(tep, nullptr);
  EXPECT_TRUE(Contains(tep->reason, "recipe mn-b300 has no arm tep16")) << tep->reason;
  const SkippedEntry* unserved = SkippedFor(p.value(), "mn-unserved", "scenarios.fixed-seq-len[0].search-space[0]");
  ASSERT_NE(unserved, nullptr);
  EXPECT_TRUE(Contains(unserved->reason, "no recipe in " + kData + "/recipes serves config key 'mn-unserved'"))
      << unserved->reason;
  EXPECT_TRUE(Contains(unserved->Describe(), "mn-unserved (")) << unserved->Describe();
  for (const PlannedEntry& e : p.value().entries) EXPECT_NE(e.config_key, "mn-disagg");
}

TEST(MultinodePlan, NothingLeftToRunIsAnErrorNamingWhatWasSkipped) {
  Result<SweepPlan> p = PlanKeys({"mn-disagg"});
  ASSERT_FALSE(p);
  EXPECT_TRUE(Contains(p.error().message, "the selection has no entries to run:\n  skipped: mn-disagg ("))
      << p.error().message;
}

SweepManifest Manifest(const SweepPlan& plan, const std::string& dir) {
  SweepManifest m;
  m.sweep_id = "sw-mn";
  m.sweep_dir = dir;
  m.ixsubmit = "/usr/bin/ixsubmit";
  m.recipe_dir = kData + "/recipes";
  m.client = {"bench", "--it's"};
  m.plan = plan;
  return m;
}

TEST(MultinodePlan, JobsAcrossNodesAskSlurmForEveryNode) {
  Result<SweepPlan> p = PlanKeys({"*"});
  ASSERT_TRUE(p) << p.error().message;
  const test::TempDir dir("ix-mn-plan");
  SweepManifest m = Manifest(p.value(), dir.path());
  const std::vector<std::string> a = SbatchArgs(m, m.plan.jobs[1], m.settings, 0);
  auto has = [&](const std::string& x) { return std::find(a.begin(), a.end(), x) != a.end(); };
  EXPECT_TRUE(has("--nodes=2"));
  EXPECT_TRUE(has("--ntasks-per-node=1"));
  EXPECT_TRUE(has("--gres=gpu:8"));  // per node
  EXPECT_FALSE(has("--ntasks=1"));
  const std::vector<std::string> one = SbatchArgs(m, m.plan.jobs[0], m.settings, 0);
  EXPECT_NE(std::find(one.begin(), one.end(), "--nodes=1"), one.end());
  EXPECT_NE(std::find(one.begin(), one.end(), "--ntasks=1"), one.end());

  const PlannedEntry& dep16 = m.plan.entries[static_cast<size_t>(m.plan.jobs[1].entries[0])];
  const std::vector<std::string> step = StepSrunArgv(m, dep16, [](const std::string&) { return false; }, m.client);
  std::vector<std::string> want = {"srun", "-N2", "--ntasks-per-node=1", "--kill-on-bad-exit=1", "--gres=gpu:8",
                                   "--inferencex-recipe=mn-b300", "--inferencex-arm=dep16", "--inferencex-conc=32"};
  const std::vector<std::string> head = HeadOnly(m.client);
  want.insert(want.end(), head.begin(), head.end());
  EXPECT_EQ(step, want);
  // The client only as the script's arguments.
  ASSERT_EQ(head.size(), 6u);
  EXPECT_EQ(head[0], "/bin/sh");
  EXPECT_EQ(head[3], "ix-head-only");
  EXPECT_EQ(head[5], "--it's");
  // A single-node entry's step is as before.
  const std::vector<std::string> sn = StepSrunArgv(m, m.plan.entries[0], [](const std::string&) { return false; }, m.client);
  EXPECT_EQ(sn[1], "--ntasks=1");
  EXPECT_EQ(sn.back(), "--it's");
}

TEST(MultinodePlan, SweepJsonKeepsNodesAndSkipped) {
  Result<SweepPlan> p = PlanKeys({"*"});
  ASSERT_TRUE(p) << p.error().message;
  const test::TempDir dir("ix-mn-files");
  SweepManifest m = Manifest(p.value(), dir.path());
  ASSERT_TRUE(WriteSweepFiles(m).ok());
  Result<SweepManifest> back = ReadSweepManifest(dir.path());
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back.value().plan.jobs[1].nodes, 2);
  EXPECT_EQ(back.value().plan.jobs[0].nodes, 1);
  EXPECT_EQ(back.value().plan.entries.back().nodes, 2);
  ASSERT_EQ(back.value().plan.skipped.size(), m.plan.skipped.size());
  for (size_t i = 0; i < m.plan.skipped.size(); ++i) {
    EXPECT_EQ(back.value().plan.skipped[i].Describe(), m.plan.skipped[i].Describe());
  }
}

}  // namespace
}  // namespace ix
