#include "submitter/sweep/sweep_dir.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/base/file_text.h"
#include "submitter/sweep/sweep_files.h"
#include "submitter/sweep/sweep_task.h"
#include "tests/support/test.h"

namespace ix {
namespace {

Result<bool> NoJobs(const std::string&) { return false; }
Result<bool> AllJobs(const std::string&) { return true; }

bool Has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(SweepDir, ASecondSubmitterFailsAtOnceNamingTheHolder) {
  test::TempDir d("ix-sweep-dir");
  Result<SweepLock> first = LockSweepDir(d.path(), "sw-1");
  ASSERT_TRUE(first.ok()) << first.error().message;
  // Another process: flock locks belong to the open file, so a second open
  // in this process would conflict as well; a child shows the real case.
  const pid_t child = ::fork();
  if (child == 0) {
    Result<SweepLock> second = LockSweepDir(d.path(), "sw-1", std::chrono::milliseconds(100));
    const bool named = !second.ok() && Has(second.error().message, "sweep sw-1") &&
                       Has(second.error().message, "pid " + std::to_string(::getppid()));
    ::_exit(named ? 0 : 1);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  // Released with its holder: the next one gets it.
  { Result<SweepLock> released = std::move(first); }  // (assigning a new value trips GCC 12's -Wmaybe-uninitialized under ASan)
  EXPECT_TRUE(LockSweepDir(d.path(), "sw-1", std::chrono::milliseconds(0)).ok());
}

void WriteManifest(const std::string& dir, const std::string& id, bool dry_run = false) {
  SweepManifest m;
  m.sweep_id = id;
  m.sweep_dir = dir;
  m.dry_run = dry_run;
  PlannedJob canary;
  canary.key = "canary";
  canary.canary = true;
  m.plan.jobs = {canary};
  ASSERT_TRUE(WriteSweepFiles(m).ok());
}

TEST(SweepDir, ALiveOrUnknownSweepKeepsItsDirectory) {
  test::TempDir d("ix-sweep-dir");
  WriteManifest(d.path(), "sw-old");
  auto running = [](const std::string&) { return std::optional<SweepState>(SweepState::kRunning); };
  Status s = ClaimSweepDir(d.path(), "sw-new", running, NoJobs);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Has(s.error().message, "sw-old") && Has(s.error().message, "sw-new")) << s.error().message;
  auto unknown = [](const std::string&) { return std::optional<SweepState>(); };
  EXPECT_FALSE(ClaimSweepDir(d.path(), "sw-new", unknown, AllJobs).ok());
  // Unknown to the database and to Slurm: stopped before sbatch; fine.
  EXPECT_TRUE(ClaimSweepDir(d.path(), "sw-new", unknown, NoJobs).ok());
  // Its own directory (a resume) and a dry run's are fine.
  EXPECT_TRUE(ClaimSweepDir(d.path(), "sw-old", running, AllJobs).ok());
  WriteManifest(d.path(), "sw-dry", true);
  EXPECT_TRUE(ClaimSweepDir(d.path(), "sw-new", unknown, AllJobs).ok());
}

TEST(SweepDir, AFinishedSweepsOutcomesAreNeverReadAsTheNewOnes) {
  test::TempDir d("ix-sweep-dir");
  WriteManifest(d.path(), "sw-old");
  std::filesystem::create_directories(d.path() + "/results/0");
  std::ofstream(d.path() + "/results/0/status.json") << R"({"sweep":"sw-old","state":"succeeded","started_at":1})";
  EXPECT_TRUE(ReadTaskStatus(d.path() + "/results/0", "sw-old").has_value());
  EXPECT_FALSE(ReadTaskStatus(d.path() + "/results/0", "sw-new").has_value());
  auto done = [](const std::string&) { return std::optional<SweepState>(SweepState::kSucceeded); };
  ASSERT_TRUE(ClaimSweepDir(d.path(), "sw-new", done, AllJobs).ok());
  EXPECT_FALSE(std::filesystem::exists(d.path() + "/results/0/status.json"));
  EXPECT_TRUE(std::filesystem::exists(d.path() + "/results.sw-old/0/status.json"));
  // A status.json without a sweep id (older builds) is not taken either.
  std::filesystem::create_directories(d.path() + "/results/1");
  std::ofstream(d.path() + "/results/1/status.json") << R"({"state":"failed","started_at":1})";
  EXPECT_FALSE(ReadTaskStatus(d.path() + "/results/1", "sw-new").has_value());
}

}  // namespace
}  // namespace ix
