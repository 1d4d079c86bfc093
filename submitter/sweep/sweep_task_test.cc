#include "submitter/sweep/sweep_task.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "submitter/sweep/sweep_files.h"
#include "submitter/testing_env.h"
#include "tests/support/test.h"

namespace ix {
namespace {

// A sweep of one array with one entry across two nodes.
SweepManifest OneMultinodeEntry(const std::string& dir) {
  SweepManifest m{.sweep_id = "sw-task", .sweep_dir = dir, .ixsubmit = "/usr/bin/ixsubmit", .client = {"bench"}};
  m.plan.entries.push_back({.job_key = "bucket:multinode-1k1k", .bucket = "multinode-1k1k", .config_key = "mn-agg",
                            .recipe = "mn-b300", .arm = "dep16", .conc = 32, .gpus = 8, .nodes = 2,
                            .entry_json = "{}"});
  m.plan.jobs.push_back({"bucket:multinode-1k1k", "multinode-1k1k", false, {0}, 8, "", 2});
  return m;
}

TEST(SweepTask, TheNodeRankComesFromThePluginOrSlurm) {
  ScopedEnv rank("IX_NODE_RANK", nullptr), node("SLURM_NODEID", nullptr);
  EXPECT_EQ(StepNodeRank(), 0);
  {
    ScopedEnv r("IX_NODE_RANK", "1");
    EXPECT_EQ(StepNodeRank(), 1);
  }
  {
    ScopedEnv n("SLURM_NODEID", "3");
    EXPECT_EQ(StepNodeRank(), 3);
  }
  for (const char* v : {"0", "", "x", "-1", "2x"}) {
    ScopedEnv r("IX_NODE_RANK", v);
    EXPECT_EQ(StepNodeRank(), 0) << v;
  }
}

TEST(SweepTask, ANodeAfterTheHeadRunsNothingAndWritesNothing) {
  const test::TempDir dir("ix-task-rank");
  const SweepManifest m = OneMultinodeEntry(dir.path());
  ASSERT_TRUE(WriteSweepFiles(m).ok());
  const std::vector<std::string> args = {"--sweep-dir", dir.path(), "--job", "bucket:multinode-1k1k"};
  ScopedEnv task("SLURM_ARRAY_TASK_ID", "0"), array("SLURM_ARRAY_JOB_ID", nullptr), path("PATH", "/nonexistent");
  for (const char* var : {"IX_NODE_RANK", "SLURM_NODEID"}) {
    ScopedEnv other(var == std::string("IX_NODE_RANK") ? "SLURM_NODEID" : "IX_NODE_RANK", nullptr);
    ScopedEnv rank(var, "1");
    EXPECT_EQ(RunTaskCommand(args), 0) << var;
    EXPECT_FALSE(std::filesystem::exists(ResultDir(m, 0))) << var;
  }
  // The head's task (rank 0) does write its entry's files: here srun is not
  // found, so the entry fails, with its status.json.
  ScopedEnv rank("IX_NODE_RANK", "0"), node("SLURM_NODEID", "0");
  EXPECT_EQ(RunTaskCommand(args), 1);
  EXPECT_TRUE(std::filesystem::exists(ResultDir(m, 0) + "/status.json"));
}

}  // namespace
}  // namespace ix
