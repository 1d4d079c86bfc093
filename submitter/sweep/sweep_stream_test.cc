#include "submitter/sweep/sweep_stream.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/base/file_text.h"
#include "tests/support/test.h"

namespace ix {
namespace {

const std::string kSweep = "sw-20260101-000000-0001";

std::string Read(const std::string& path) {
  int err = 0;
  return ReadFileText(path, &err);
}

// ---- WriteResultFile ------------------------------------------------------------------

TEST(WriteResultFile, WritesIntoResultsIndexAndLeavesTheSameContentAlone) {
  test::TempDir dir("ix-stream");
  EXPECT_TRUE(WriteResultFile(dir.path(), 4, "result.json", "{\"a\":1}\n").value());
  EXPECT_EQ(Read(dir.path() + "/results/4/result.json"), "{\"a\":1}\n");
  EXPECT_FALSE(WriteResultFile(dir.path(), 4, "result.json", "{\"a\":1}\n").value());  // the same again
  EXPECT_TRUE(WriteResultFile(dir.path(), 4, "result.json", "{\"a\":2}\n").value());
  EXPECT_EQ(Read(dir.path() + "/results/4/result.json"), "{\"a\":2}\n");
  struct stat st {};
  ASSERT_EQ(::stat((dir.path() + "/results/4/result.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  // No temporary file is left behind.
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path() + "/results/4")) n += e.exists() ? 1 : 0;
  EXPECT_EQ(n, 1u);
}

TEST(WriteResultFile, RefusesNamesThatCouldLeaveTheDirectory) {
  test::TempDir dir("ix-stream");
  for (const char* bad : {"", ".", "..", "../x", "a/b/c", "a/", "/a", "a/..", ".d/x", "d/.x", "a..b", ".hidden", "a b",
                          "a\nb"}) {
    Result<bool> w = WriteResultFile(dir.path(), 0, bad, "x");
    ASSERT_FALSE(w) << bad;
    EXPECT_NE(w.error().message.find("not a result name"), std::string::npos) << w.error().message;
  }
  EXPECT_FALSE(WriteResultFile(dir.path(), 0, std::string(256, 'a'), "x"));
  EXPECT_TRUE(WriteResultFile(dir.path(), 0, std::string(255, 'a'), "x"));
  EXPECT_FALSE(WriteResultFile(dir.path(), -1, "x", "x"));
}

TEST(WriteResultFile, ADirectoryLevelIsMadeAndNeverALink) {
  test::TempDir dir("ix-stream");
  test::TempDir elsewhere("ix-stream-target");
  EXPECT_TRUE(WriteResultFile(dir.path(), 2, "aiperf_artifacts/profile_export.jsonl", "{}\n").value());
  EXPECT_EQ(Read(dir.path() + "/results/2/aiperf_artifacts/profile_export.jsonl"), "{}\n");
  EXPECT_FALSE(WriteResultFile(dir.path(), 2, "aiperf_artifacts/profile_export.jsonl", "{}\n").value());
  std::filesystem::create_directory_symlink(elsewhere.path(), dir.path() + "/results/2/linked");
  Result<bool> w = WriteResultFile(dir.path(), 2, "linked/x.json", "x");
  ASSERT_FALSE(w);
  EXPECT_NE(w.error().message.find("/results/2/linked"), std::string::npos) << w.error().message;
  EXPECT_TRUE(std::filesystem::is_empty(elsewhere.path()));
}

TEST(WriteResultFile, NeverFollowsALink) {
  test::TempDir dir("ix-stream");
  test::TempDir elsewhere("ix-stream-target");
  std::filesystem::create_directories(dir.path() + "/results");
  // results/7 a link to another directory: refused.
  std::filesystem::create_directory_symlink(elsewhere.path(), dir.path() + "/results/7");
  Result<bool> w = WriteResultFile(dir.path(), 7, "result.json", "x");
  ASSERT_FALSE(w);
  EXPECT_NE(w.error().message.find("symbolic link"), std::string::npos) << w.error().message;
  EXPECT_FALSE(std::filesystem::exists(elsewhere.path() + "/result.json"));
  // results/8/NAME a link to a file elsewhere: the link is replaced, its target untouched.
  std::filesystem::create_directories(dir.path() + "/results/8");
  std::ofstream(elsewhere.path() + "/target") << "keep";
  std::filesystem::create_symlink(elsewhere.path() + "/target", dir.path() + "/results/8/server.log");
  EXPECT_TRUE(WriteResultFile(dir.path(), 8, "server.log", "log").value());
  EXPECT_EQ(Read(elsewhere.path() + "/target"), "keep");
  EXPECT_FALSE(std::filesystem::is_symlink(dir.path() + "/results/8/server.log"));
  EXPECT_EQ(Read(dir.path() + "/results/8/server.log"), "log");
}

// ---- StreamTracker ---------------------------------------------------------------------

// A sweep of `n` entries in one bucket, its directory, and an inbox.
struct Stream {
  test::TempDir dir{"ix-stream"};
  SweepManifest m;
  SweepInbox inbox;

  explicit Stream(int n, bool node_results = false) {
    m.sweep_id = kSweep;
    m.sweep_dir = dir.path();
    if (node_results) m.stream.node_result_dir = "/tmp/ix-node-results";
    for (int i = 0; i < n; ++i) {
      PlannedEntry e;
      e.index = i;
      m.plan.entries.push_back(e);
    }
  }
  void Push(StreamItem::Kind kind, int64_t entry, const std::string& state_or_name = "", double time = 100) {
    StreamItem item;
    item.kind = kind;
    item.entry = entry;
    item.time = time;
    (kind == StreamItem::Kind::kEntry ? item.state : item.name) = state_or_name;
    if (kind == StreamItem::Kind::kResultFile) item.content = "content of " + state_or_name;
    inbox.Push(item);
  }
};

EntryRecord Record(int64_t index, EntryState state, std::optional<double> started = std::nullopt) {
  return EntryRecord{.index = index, .state = state, .started_at = started};
}

TEST(StreamTracker, TurnsTheTasksWordsIntoStoreUpdates) {
  Stream s(3);
  StreamTracker t(s.m, &s.inbox);
  s.Push(StreamItem::Kind::kEntry, 0, "running", 100);
  StreamItem failed;
  failed.kind = StreamItem::Kind::kEntry;
  failed.entry = 1;
  failed.time = 150;
  failed.state = "failed";
  failed.exit_code = 3;
  failed.reason = "engine died";
  failed.process = "engine0";
  s.inbox.Push(failed);
  StreamItem step;
  step.kind = StreamItem::Kind::kFailure;
  step.entry = 2;
  step.time = 160;
  step.reason = "router exited";
  step.process = "router";
  s.inbox.Push(step);
  s.Push(StreamItem::Kind::kEntry, 9, "running");  // not in the sweep
  std::vector<std::string> problems;
  const std::vector<EntryUpdate> u = t.Take(problems);
  ASSERT_EQ(u.size(), 3u);
  EXPECT_EQ(u[0].index, 0);
  EXPECT_EQ(u[0].state, EntryState::kRunning);
  EXPECT_EQ(u[0].started_at, 100);
  EXPECT_TRUE(t.HeardRunning(0));
  EXPECT_EQ(u[1].state, EntryState::kFailed);
  EXPECT_EQ(u[1].exit_code, 3);
  EXPECT_EQ(u[1].ended_at, 150);
  EXPECT_EQ(u[1].failure_reason, "engine died");
  EXPECT_EQ(u[1].failure_process, "engine0");
  EXPECT_EQ(u[1].result_path, s.dir.path() + "/results/1");
  EXPECT_TRUE(t.FinalWord(1));
  EXPECT_EQ(u[2].state, EntryState::kFailed);
  EXPECT_EQ(u[2].failure_reason, "router exited");
  EXPECT_FALSE(t.FinalWord(2));  // the task has not said its last yet
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("entry 9"), std::string::npos) << problems[0];
  EXPECT_TRUE(t.Take(problems).empty());
}

TEST(StreamTracker, WritesResultFilesAndReadsTheirStatus) {
  Stream s(2);
  StreamTracker t(s.m, &s.inbox);
  s.Push(StreamItem::Kind::kResultFile, 1, "result.json");
  StreamItem status;
  status.kind = StreamItem::Kind::kResultFile;
  status.entry = 1;
  status.name = "status.json";
  status.content = "{\"sweep\":\"" + kSweep + "\",\"state\":\"succeeded\",\"started_at\":1,\"ended_at\":2}";
  s.inbox.Push(status);
  s.Push(StreamItem::Kind::kResultFile, 1, "../escape");
  std::vector<std::string> problems;
  EXPECT_TRUE(t.Take(problems).empty());
  EXPECT_EQ(Read(s.dir.path() + "/results/1/result.json"), "content of result.json");
  EXPECT_TRUE(t.FinalWord(1));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("not a result name"), std::string::npos) << problems[0];
}

TEST(StreamTracker, WithoutNodeResultsSlurmsWordStandsAtOnce) {
  Stream s(1);
  StreamTracker t(s.m, &s.inbox);
  EntryUpdate u;
  u.state = EntryState::kFailed;
  EXPECT_TRUE(t.SettleEnded(Record(0, EntryState::kRunning, 5), u, 100));
  EXPECT_FALSE(t.AwaitingResults(Record(0, EntryState::kFailed, 5), 100));
  StreamTracker none(s.m, nullptr);
  EXPECT_FALSE(none.enabled());
  EXPECT_TRUE(none.SettleEnded(Record(0, EntryState::kRunning, 5), u, 100));
}

TEST(StreamTracker, WithNodeResultsAnEndedEntryWaitsForItsWordThenGivesUp) {
  Stream s(3, /*node_results=*/true);
  StreamTracker t(s.m, &s.inbox);
  EntryUpdate failed;
  failed.index = 0;
  failed.state = EntryState::kFailed;
  failed.failure_reason = "Slurm ended the job: TIMEOUT";
  const EntryRecord running = Record(0, EntryState::kRunning, 50);
  EXPECT_FALSE(t.SettleEnded(running, failed, 100));
  EXPECT_FALSE(t.SettleEnded(running, failed, 159));
  const std::optional<EntryUpdate> given_up = t.SettleEnded(running, failed, 160);
  ASSERT_TRUE(given_up);
  EXPECT_EQ(given_up->state, EntryState::kFailed);
  EXPECT_EQ(given_up->failure_reason,
            "Slurm ended the job: TIMEOUT; results not delivered by the node agent within 60 s");
  EXPECT_FALSE(t.AwaitingResults(Record(0, EntryState::kFailed, 50), 161));
  // A task cancelled before it ran has nothing to deliver.
  EntryUpdate cancelled;
  cancelled.index = 1;
  cancelled.state = EntryState::kCancelled;
  EXPECT_TRUE(t.SettleEnded(Record(1, EntryState::kPending), cancelled, 100));
  // One whose final word came is settled at once.
  s.Push(StreamItem::Kind::kEntry, 2, "succeeded");
  std::vector<std::string> problems;
  (void)t.Take(problems);
  EXPECT_TRUE(t.SettleEnded(Record(2, EntryState::kRunning, 50), failed, 100));
}

TEST(StreamTracker, WithNodeResultsTheWatchWaitsForAnnouncedFiles) {
  Stream s(2, /*node_results=*/true);
  StreamTracker t(s.m, &s.inbox);
  s.Push(StreamItem::Kind::kResultNamed, 0, "result.json");
  s.Push(StreamItem::Kind::kResultNamed, 0, "server.log");
  s.Push(StreamItem::Kind::kEntry, 0, "succeeded");
  s.Push(StreamItem::Kind::kResultFile, 0, "result.json");
  std::vector<std::string> problems;
  (void)t.Take(problems);
  const EntryRecord done = Record(0, EntryState::kSucceeded, 50);
  EXPECT_TRUE(t.AwaitingResults(done, 100));  // server.log is on its way
  s.Push(StreamItem::Kind::kResultFile, 0, "server.log");
  (void)t.Take(problems);
  EXPECT_FALSE(t.AwaitingResults(done, 101));
  // An entry that ran, failed by its step's failure, without its task's last word: awaited 60 s.
  const EntryRecord failed = Record(1, EntryState::kFailed, 50);
  EXPECT_TRUE(t.AwaitingResults(failed, 200));
  EXPECT_TRUE(t.AwaitingResults(failed, 259));
  EXPECT_FALSE(t.AwaitingResults(failed, 260));
  EXPECT_FALSE(t.AwaitingResults(Record(1, EntryState::kRunning, 50), 100));  // not final: Slurm's to say
  EXPECT_TRUE(problems.empty());
}

}  // namespace
}  // namespace ix
