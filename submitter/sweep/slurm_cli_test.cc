#include "submitter/sweep/slurm_cli.h"

#include <sys/stat.h>

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include "tests/support/test.h"

namespace ix {
namespace {

using test::TempDir;

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

const std::vector<std::string> kEnv{"PATH=/usr/bin:/bin", "LC_ALL=C"};

// RealSlurmCli against fake programs: shell scripts standing in for Slurm's
// tools. The parsers themselves are tested in slurm_output_test.cc.

// A shell script standing in for a Slurm tool: it records its arguments one
// a line in NAME.args and runs `body`.
std::string FakeTool(const TempDir& d, const std::string& name, const std::string& body) {
  const std::string path = d.path() + "/" + name;
  std::ofstream(path) << "#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$0.args\"\n" << body << "\n";
  ::chmod(path.c_str(), 0755);
  return path;
}

std::string Args(const std::string& tool) {
  std::ifstream in(tool + ".args");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(RealSlurmCli, SubmitPassesArgvAndEnvironmentAndReadsTheId) {
  TempDir d("ix-slurm-cli-test");
  SlurmPrograms p;
  p.sbatch = FakeTool(d, "sbatch",
                      "echo \"sbatch: warning: $IX_SWEEP_ID\" >&2\n"
                      "echo '4242;cluster'");
  RealSlurmCli cli({"PATH=/usr/bin:/bin", "IX_SWEEP_ID=sw-1"}, p);
  Result<int64_t> id = cli.Submit({"--array=0-7%2", "--job-name=ix sw-1 8k1k", "--dependency=afterok:1239",
                                   "--output=/s/logs/%A_%a.out"},
                                  "/s/8k1k.sh");
  ASSERT_TRUE(id.ok()) << id.error().message;
  EXPECT_EQ(id.value(), 4242);
  EXPECT_EQ(Args(p.sbatch),
            "--parsable\n--array=0-7%2\n--job-name=ix sw-1 8k1k\n--dependency=afterok:1239\n"
            "--output=/s/logs/%A_%a.out\n/s/8k1k.sh\n");
}

TEST(RealSlurmCli, RejectionCarriesSbatchStderrVerbatim) {
  TempDir d("ix-slurm-cli-test");
  SlurmPrograms p;
  p.sbatch = FakeTool(d, "sbatch", "echo 'sbatch: error: invalid partition specified: nope' >&2\nexit 1");
  RealSlurmCli cli(kEnv, p);
  Result<int64_t> id = cli.Submit({"--partition=nope"}, "/s/canary.sh");
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.error().message,
            "sbatch rejected /s/canary.sh (exit status 1): sbatch: error: invalid partition specified: nope");

  p.sbatch = FakeTool(d, "sbatch2", "echo 'Submitted batch job 12'");
  Result<int64_t> odd = RealSlurmCli(kEnv, p).Submit({}, "/s/x.sh");
  ASSERT_FALSE(odd.ok());
  EXPECT_TRUE(Contains(odd.error().message, "printed 'Submitted batch job 12'")) << odd.error().message;

  // The real programs by name, through PATH: here a directory holding the fake.
  FakeTool(d, "sbatch", "echo 77");
  RealSlurmCli by_path({"PATH=" + d.path() + ":/usr/bin:/bin"});
  EXPECT_EQ(by_path.Submit({}, "/s/x.sh").value(), 77);
}

// Only a clean rejection proves no job was made; a timeout, a kill or an
// answer without an id leave it open, and the caller must look it up.
TEST(RealSlurmCli, SubmitSaysWhenTheJobMayExist) {
  TempDir d("ix-slurm-cli-test");
  struct Case {
    const char* sbatch;  // the fake's body
    int limit_ms;
    bool may_exist;
  };
  const Case cases[] = {
      {"echo 'sbatch: error: invalid partition' >&2\nexit 1", 60000, false},  // rejected
      {"echo 'Submitted batch job 12'", 60000, true},                          // no id
      {"sleep 5", 200, true},                                                  // past the time limit
      {"kill -9 $$", 60000, true},                                             // killed
  };
  int n = 0;
  for (const Case& c : cases) {
    SlurmPrograms p;
    p.sbatch = FakeTool(d, "sbatch" + std::to_string(++n), c.sbatch);
    Result<int64_t> id = RealSlurmCli(kEnv, p, std::chrono::milliseconds(c.limit_ms)).Submit({}, "/s/x.sh");
    ASSERT_FALSE(id.ok()) << c.sbatch;
    EXPECT_EQ(SubmitOutcomeUnknown(id.error()), c.may_exist) << id.error().message;
  }
}

TEST(RealSlurmCli, QueueArgvAndParsing) {
  TempDir d("ix-slurm-cli-test");
  SlurmPrograms p;
  p.squeue = FakeTool(d, "squeue",
                      "printf '1240_0|RUNNING|None\\n1240_[1-3%%2]|PENDING|JobArrayTaskLimit\\n1239|COMPLETED|None\\n'");
  RealSlurmCli cli(kEnv, p);
  Result<std::vector<QueueTask>> q = cli.Queue({1239, 1240});
  ASSERT_TRUE(q.ok()) << q.error().message;
  ASSERT_EQ(q.value().size(), 5u);
  EXPECT_EQ(q.value()[3].id.ToString(), "1240_3");
  EXPECT_EQ(Args(p.squeue), "--noheader\n--array\n--states=all\n--jobs=1239,1240\n--format=%i|%T|%r\n");
  EXPECT_TRUE(cli.Queue({}).value().empty());

  // A job slurmctld has forgotten.
  p.squeue = FakeTool(d, "squeue2", "echo 'slurm_load_jobs error: Invalid job id specified' >&2; exit 1");
  Result<std::vector<QueueTask>> gone = RealSlurmCli(kEnv, p).Queue({99});
  ASSERT_TRUE(gone.ok()) << gone.error().message;
  EXPECT_TRUE(gone.value().empty());
  p.squeue = FakeTool(d, "squeue3", "echo 'squeue: error: Unable to contact slurm controller' >&2; exit 1");
  Result<std::vector<QueueTask>> down = RealSlurmCli(kEnv, p).Queue({99});
  ASSERT_FALSE(down.ok());
  EXPECT_EQ(down.error().message, "squeue failed (exit status 1): squeue: error: Unable to contact slurm controller");
}

TEST(RealSlurmCli, CancelWithStateFilterAndFinishedJobs) {
  TempDir d("ix-slurm-cli-test");
  SlurmPrograms p;
  p.scancel = FakeTool(d, "scancel", "exit 0");
  RealSlurmCli cli(kEnv, p);
  ASSERT_TRUE(cli.Cancel({"1240", "1241_3"}, SlurmState::kPending).ok());
  EXPECT_EQ(Args(p.scancel), "--quiet\n--state=PENDING\n1240\n1241_3\n");
  EXPECT_TRUE(cli.Cancel({}).ok());
  EXPECT_TRUE(Contains(cli.Cancel({"1240"}, SlurmState::kFailed).error().message, "use PENDING, RUNNING or SUSPENDED"));
  EXPECT_FALSE(cli.Cancel({"1240; rm -rf /"}).ok());

  p.scancel = FakeTool(d, "scancel2",
                       "echo 'scancel: error: Kill job error on job id 1240: Job/step already completing or "
                       "completed' >&2; exit 1");
  EXPECT_TRUE(RealSlurmCli(kEnv, p).Cancel({"1240"}).ok());
  p.scancel = FakeTool(d, "scancel3", "echo 'scancel: error: Access/permission denied' >&2; exit 1");
  Status denied = RealSlurmCli(kEnv, p).Cancel({"1240"});
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.error().message, "scancel 1240 failed (exit status 1): scancel: error: Access/permission denied");
}

TEST(RealSlurmCli, ShowJobAndFindByName) {
  TempDir d("ix-slurm-cli-test");
  SlurmPrograms p;
  p.scontrol = FakeTool(d, "scontrol",
                        "echo 'JobId=1237 ArrayJobId=1235 ArrayTaskId=2 JobName=ix-8k1k JobState=FAILED ExitCode=1:0'");
  p.squeue = FakeTool(d, "squeue", "printf '1235\\n1235\\n'");
  p.sacct = FakeTool(d, "sacct", "exit 1");
  RealSlurmCli cli(kEnv, p);
  Result<std::vector<JobInfo>> j = cli.ShowJob(1235);
  ASSERT_TRUE(j.ok()) << j.error().message;
  ASSERT_EQ(j.value().size(), 1u);
  EXPECT_EQ(j.value()[0].exit_code.status, 1);
  EXPECT_EQ(Args(p.scontrol), "--oneliner\nshow\njob\n1235\n");
  Result<std::vector<int64_t>> found = cli.FindJobsByName("ix-8k1k");
  ASSERT_TRUE(found.ok()) << found.error().message;
  EXPECT_EQ(found.value(), std::vector<int64_t>{1235});
  EXPECT_TRUE(Contains(Args(p.squeue), "--name=ix-8k1k\n--format=%F\n"));

  // Not in squeue any more: sacct knows it; with accounting off, nothing.
  p.squeue = FakeTool(d, "squeue2", "exit 0");
  p.sacct = FakeTool(d, "sacct2", "printf '1300_[0-3]\\n1300_4\\n1300_4.batch\\n'");
  EXPECT_EQ(RealSlurmCli(kEnv, p).FindJobsByName("ix-8k1k").value(), std::vector<int64_t>{1300});
  p.sacct = FakeTool(d, "sacct3", "echo 'sacct: error: Slurm accounting storage is disabled' >&2; exit 1");
  EXPECT_TRUE(RealSlurmCli(kEnv, p).FindJobsByName("ix-8k1k").value().empty());

  p.scontrol = FakeTool(d, "scontrol2", "echo 'slurm_load_jobs error: Invalid job id specified' >&2; exit 1");
  Result<std::vector<JobInfo>> none = RealSlurmCli(kEnv, p).ShowJob(5);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().message,
            "scontrol show job 5 failed (exit status 1): slurm_load_jobs error: Invalid job id specified");
}

}  // namespace
}  // namespace ix
