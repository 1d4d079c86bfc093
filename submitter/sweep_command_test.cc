// `ixsubmit sweep --dry-run` over multinode entries: what runs, what is
// skipped and why, and what sweep.json keeps.
#include "submitter/sweep_command.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include "core/base/file_text.h"
#include "tests/support/test.h"

namespace ix {
namespace {

const std::string kData = IX_SOURCE_DIR "/tests/data/sweep-multinode";

bool Contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(SweepCommand, ADryRunListsTheSkippedEntriesAndTheStepsAcrossNodes) {
  const test::TempDir dir("ix-mn-dry");
  // No Slurm tools: the dry run needs none (MaxArraySize falls back).
  const char* old_path = std::getenv("PATH");
  const std::string saved = old_path ? old_path : "";
  ::setenv("PATH", "/nonexistent", 1);
  ::testing::internal::CaptureStdout();
  const int rc = RunSweepCommand({"full-sweep-enabled", "--config-files", kData + "/master.yaml", "--runner-config",
                                  kData + "/runners.yaml", "--config-keys", "mn-*", "sn", "--recipe-dir",
                                  kData + "/recipes", "--sweep-dir", dir.path() + "/s", "--db", dir.path() + "/ix.db",
                                  "--no-container", "--no-collector", "--dry-run", "--", "bench", "--x"});
  const std::string out = ::testing::internal::GetCapturedStdout();
  ::setenv("PATH", saved.c_str(), 1);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_TRUE(Contains(out, "sweep: skipped mn-disagg (" + kData + "/master.yaml:")) << out;
  EXPECT_TRUE(Contains(out, "conc [64]: disaggregated (disagg: true")) << out;
  EXPECT_TRUE(Contains(out, "sweep: skipped mn-unserved (")) << out;
  EXPECT_TRUE(Contains(out, "recipe mn-b300 has no arm tep16")) << out;
  EXPECT_TRUE(Contains(out, "sweep: 3 skipped (not submitted; kept in sweep.json under \"skipped\"), 4 entries to run"))
      << out;
  EXPECT_TRUE(Contains(out, "# bucket:multinode-1k1k: 3 entries\nsbatch --parsable --job-name=")) << out;
  EXPECT_TRUE(Contains(out, "--nodes=2 --ntasks-per-node=1 --gres=gpu:8")) << out;
  EXPECT_TRUE(Contains(out, "runs: srun -N2 --ntasks-per-node=1 --kill-on-bad-exit=1 --gres=gpu:8 "
                            "--inferencex-recipe=mn-b300 --inferencex-arm=dep16 --inferencex-conc=32 /bin/sh -c"))
      << out;
  int err = 0;
  const std::string json = ReadFileText(dir.path() + "/s/sweep.json", &err);
  ASSERT_EQ(err, 0);
  EXPECT_TRUE(Contains(json, "\"skipped\": [")) << json;
  EXPECT_TRUE(Contains(json, "\"config_key\": \"mn-disagg\"")) << json;
}

TEST(SweepCommand, ASelectionWithNothingToRunFailsNamingWhatWasSkipped) {
  const test::TempDir dir("ix-mn-none");
  ::testing::internal::CaptureStderr();
  const int rc = RunSweepCommand({"full-sweep-enabled", "--config-files", kData + "/master.yaml", "--runner-config",
                                  kData + "/runners.yaml", "--config-keys", "mn-disagg", "--recipe-dir",
                                  kData + "/recipes", "--sweep-dir", dir.path() + "/s", "--db", dir.path() + "/ix.db",
                                  "--no-container", "--no-collector", "--dry-run", "--", "bench"});
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(rc, 1) << err;
  EXPECT_TRUE(Contains(err, "no entries to run:\n  skipped: mn-disagg (")) << err;
}

}  // namespace
}  // namespace ix
