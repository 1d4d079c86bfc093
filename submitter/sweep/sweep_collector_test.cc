// The sweep's collector in-process with the driver on the fake Slurm: what
// a node agent sends over HTTP (as cpp-httplib's client sends it) changes
// the sweep as the driver watches it.
#include "submitter/sweep/sweep_collector.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <filesystem>

#include "core/base/file_text.h"
#include "core/base/sha256.h"
#include "submitter/sweep/sweep_driver.h"
#include "submitter/sweep/sweep_test_plan.h"
#include "tests/support/fake_slurm_cli.h"
#include "tests/support/test.h"

namespace ix {
namespace {

using test::FakeSlurmCli;

const std::string kToken = "c0ll3ct0r-t0k3n-0123456789abcdef";

std::string Read(const std::string& path) {
  int err = 0;
  return ReadFileText(path, &err);
}

// A recorded sweep of arrays ("bucket:NAME", entries), its collector on
// 127.0.0.1 (a free port) feeding the driver's inbox, a client to it, and
// hooks whose clock moves one second per pause. Job ids are 1001, ...
struct StreamSweep : test::RecordedSweep {
  SweepInbox inbox;
  std::unique_ptr<SweepCollector> collector;
  std::unique_ptr<httplib::Client> client;
  int seq = 0;

  StreamSweep(const std::vector<std::pair<std::string, int>>& jobs, bool fail_fast, bool node_results = false)
      : RecordedSweep("ix-sweep-stream", fail_fast) {
    if (node_results) m.stream.node_result_dir = "/tmp/ix-node-results";
    for (const auto& [key, n] : jobs) AddJob(key, n, "cfg");
    Record();
    StartCollector();
  }
  ~StreamSweep() {
    if (collector) collector->Stop();
  }

  void StartCollector() {
    Result<std::unique_ptr<SweepCollector>> c =
        SweepCollector::Start(m, ParseListenAddress("127.0.0.1:0", "test").value(), DbPath(), kToken, inbox);
    ASSERT_TRUE(c) << c.error().message;
    collector = std::move(c).value();
    client = std::make_unique<httplib::Client>("127.0.0.1", collector->address().port);
  }

  WatchHooks Hooks() {
    WatchHooks h = RecordedSweep::Hooks();
    h.stream = &inbox;
    return h;
  }
  int SubmitAndWatch() {
    SweepDriver d(*store, slurm, id, m, Hooks());
    EXPECT_TRUE(d.Submit().ok());
    return d.Watch();
  }

  // One event of entry `entry`, as the agent posts it; its HTTP status.
  int Send(const std::string& event, int64_t entry, const std::string& fields, const std::string& token = kToken) {
    const std::string body = R"([{"id":"1001.batch:)" + std::to_string(++seq) + R"(","event":")" + event +
                             R"(","step":"1001.batch","time":)" + std::to_string(clock) + R"(,"sweep":")" + id +
                             R"(","entry":)" + std::to_string(entry) + R"(,"node":"n1",)" + fields + "}]";
    httplib::Result r = client->Post("/v1/events", {{"Authorization", "Bearer " + token}}, body, "application/json");
    EXPECT_TRUE(r);
    return r ? r->status : 0;
  }
  int Put(int64_t entry, const std::string& name, const std::string& content) {
    const std::string path = "/v1/results/" + id + "/" + std::to_string(entry) + "/" + name;
    httplib::Result r = client->Put(path.c_str(),
                                    {{"Authorization", "Bearer " + kToken}, {"X-Content-SHA256", Sha256Hex(content)}},
                                    content, "application/octet-stream");
    EXPECT_TRUE(r);
    return r ? r->status : 0;
  }

  EntryRecord Entry(int64_t index) { return store->LoadSweep(id).value().entries[static_cast<size_t>(index)]; }
  std::string Output() {
    std::fflush(out);
    return Read(dir.path() + "/out.txt");
  }
};

// The address it got reads back (what sweep.json keeps for --resume).
TEST(SweepCollector, ListensOnAFreePort) {
  StreamSweep s({{"bucket:a", 1}}, false);
  const ListenAddress a = s.collector->address();
  EXPECT_EQ(a.host, "127.0.0.1");
  EXPECT_GT(a.port, 0);
  EXPECT_EQ(ParseListenAddress(a.ToString(), "stream.collector_listen").value().ToString(), a.ToString());
}

TEST(SweepCollector, AWrongTokenIsRefusedAndReachesNothing) {
  StreamSweep s({{"bucket:a", 1}}, false);
  EXPECT_EQ(s.Send("entry", 0, R"("state":"running")", "not-the-token-0123456789"), 401);
  EXPECT_FALSE(s.inbox.WaitFor(std::chrono::milliseconds(1)));
  EXPECT_EQ(s.Send("entry", 0, R"("state":"running")"), 200);
  EXPECT_EQ(s.inbox.Drain().size(), 1u);
}

// The task's `entry` events set the state before squeue says anything.
TEST(SweepCollector, EntryEventsChangeTheStateSoonerThanSlurm) {
  StreamSweep s({{"bucket:a", 1}}, false);
  s.slurm.OnQueue(1, [&](FakeSlurmCli&) { EXPECT_EQ(s.Send("entry", 0, R"("state":"running")"), 200); });
  s.slurm.OnQueue(2, [&](FakeSlurmCli&) {
    EXPECT_EQ(s.Entry(0).state, EntryState::kRunning);  // squeue still says PENDING
    EXPECT_EQ(s.Send("entry", 0, R"("state":"succeeded","exit_code":0)"), 200);
  });
  EXPECT_EQ(s.SubmitAndWatch(), 0);
  EXPECT_EQ(s.slurm.StateOf(1001, 0), SlurmState::kPending);
  const EntryRecord e = s.Entry(0);
  EXPECT_EQ(e.state, EntryState::kSucceeded);
  EXPECT_EQ(e.exit_code, 0);
  EXPECT_EQ(e.started_at, 1000);
  EXPECT_EQ(e.ended_at, 1001);
  EXPECT_EQ(e.result_path, s.dir.path() + "/results/0");
}

// ix-stepd's failure: under fail-fast the rest of the bucket is cancelled in
// the next look, before Slurm says the task failed, and the failed task
// itself is left to finish (it is sending its results).
TEST(SweepCollector, AFailureEventCancelsTheRestOfItsBucketAtOnce) {
  StreamSweep s({{"bucket:a", 3}, {"bucket:b", 1}}, /*fail_fast=*/true);
  s.slurm.OnQueue(1, [](FakeSlurmCli& f) {
    f.SetTaskState(1001, 0, SlurmState::kRunning);
    f.SetTaskState(1001, 1, SlurmState::kRunning);
    f.SetTaskState(1002, 0, SlurmState::kRunning);
  });
  s.slurm.OnQueue(2, [&](FakeSlurmCli&) {
    EXPECT_EQ(s.Send("failure", 0, R"("failure":{"process":"engine0","pid":5,"reason":"engine0 exited with 1"})"),
              200);
  });
  s.slurm.OnQueue(4, [&](FakeSlurmCli& f) {
    EXPECT_EQ(f.StateOf(1001, 0), SlurmState::kRunning);
    EXPECT_EQ(f.StateOf(1001, 1), SlurmState::kCancelled);
    EXPECT_EQ(f.StateOf(1001, 2), SlurmState::kCancelled);
    f.SetTaskState(1001, 0, SlurmState::kFailed);
    EXPECT_EQ(s.Send("entry", 3, R"("state":"succeeded","exit_code":0)"), 200);
  });
  EXPECT_EQ(s.SubmitAndWatch(), 1);
  EXPECT_EQ(s.slurm.cancels(), (std::vector<std::vector<std::string>>{{"1001"}, {"1001_1", "1001_2"}}));
  EXPECT_EQ(s.slurm.StateOf(1002, 0), SlurmState::kRunning);  // bucket b: never cancelled
  EXPECT_EQ(s.Entry(0).state, EntryState::kFailed);
  EXPECT_EQ(s.Entry(0).failure_reason, "engine0 exited with 1");
  EXPECT_EQ(s.Entry(0).failure_process, "engine0");
  for (int64_t i : {1, 2}) {
    EXPECT_EQ(s.Entry(i).state, EntryState::kCancelled) << i;
    EXPECT_EQ(s.Entry(i).failure_reason, "fail-fast: entry 0 of bucket a failed") << i;
  }
  EXPECT_EQ(s.Entry(3).state, EntryState::kSucceeded);
  EXPECT_NE(s.Output().find("cancelled bucket:a (job 1001): fail-fast: entry 0 of bucket a failed"),
            std::string::npos)
      << s.Output();
}

TEST(SweepCollector, AResultFileLandsInResultsIndex) {
  StreamSweep s({{"bucket:a", 2}}, false);
  s.slurm.OnQueue(1, [&](FakeSlurmCli&) {
    EXPECT_EQ(s.Put(1, "result.json", "{\"throughput\":12.5}\n"), 201);
    EXPECT_EQ(s.Send("entry", 0, R"("state":"succeeded","exit_code":0)"), 200);
    EXPECT_EQ(s.Send("entry", 1, R"("state":"succeeded","exit_code":0)"), 200);
  });
  EXPECT_EQ(s.SubmitAndWatch(), 0);
  EXPECT_EQ(Read(s.dir.path() + "/results/1/result.json"), "{\"throughput\":12.5}\n");
  EXPECT_FALSE(std::filesystem::exists(s.dir.path() + "/results/0/result.json"));
}

// With node results an entry Slurm says ended without a word from its node
// is failed after the grace, naming why.
TEST(SweepCollector, WithNodeResultsAnEntryWithoutItsResultsFailsAfterTheGrace) {
  StreamSweep s({{"bucket:a", 1}}, false, /*node_results=*/true);
  s.slurm.OnQueue(1, [](FakeSlurmCli& f) { f.SetTaskState(1001, 0, SlurmState::kRunning); });
  s.slurm.OnQueue(2, [](FakeSlurmCli& f) { f.SetTaskState(1001, 0, SlurmState::kCompleted); });
  s.slurm.OnQueue(3, [&](FakeSlurmCli&) { EXPECT_EQ(s.Entry(0).state, EntryState::kRunning); });
  EXPECT_EQ(s.SubmitAndWatch(), 1);
  EXPECT_GE(s.pauses, 60);
  const EntryRecord e = s.Entry(0);
  EXPECT_EQ(e.state, EntryState::kFailed);
  EXPECT_EQ(e.failure_reason, kResultsNotDelivered);
}

// With node results the watch goes on until the files the task announced
// have arrived.
TEST(SweepCollector, WithNodeResultsTheWatchWaitsForAnnouncedFiles) {
  StreamSweep s({{"bucket:a", 1}}, false, /*node_results=*/true);
  s.slurm.OnQueue(1, [](FakeSlurmCli& f) { f.SetTaskState(1001, 0, SlurmState::kRunning); });
  s.slurm.OnQueue(2, [&](FakeSlurmCli& f) {
    f.SetTaskState(1001, 0, SlurmState::kCompleted);
    EXPECT_EQ(s.Send("result", 0, R"("name":"result.json")"), 200);
    EXPECT_EQ(s.Send("result", 0, R"("name":"gpu_metrics.csv")"), 200);
    EXPECT_EQ(s.Put(0, "result.json", "{}"), 201);
    EXPECT_EQ(s.Send("entry", 0, R"("state":"succeeded","exit_code":0)"), 200);
  });
  s.slurm.OnQueue(4, [&](FakeSlurmCli&) {
    EXPECT_NE(s.Output().find("waiting up to 60 s for the results of 1 entries from the node agents"),
              std::string::npos)
        << s.Output();
    EXPECT_EQ(s.Put(0, "gpu_metrics.csv", "timestamp, index\n"), 201);
  });
  EXPECT_EQ(s.SubmitAndWatch(), 0);
  EXPECT_EQ(s.slurm.queue_calls(), 5);
  EXPECT_EQ(s.Entry(0).state, EntryState::kSucceeded);
  EXPECT_EQ(Read(s.dir.path() + "/results/0/gpu_metrics.csv"), "timestamp, index\n");
  EXPECT_EQ(Read(s.dir.path() + "/results/0/result.json"), "{}");
}

// A collector started again (a --resume) hands the driver what the
// database already holds: the events, and the files written out.
TEST(SweepCollector, ARestartedCollectorReplaysWhatWasStored) {
  StreamSweep s({{"bucket:a", 1}}, false);
  EXPECT_EQ(s.Send("entry", 0, R"("state":"running")"), 200);
  EXPECT_EQ(s.Put(0, "server.log", "INFO ready\n"), 201);
  EXPECT_EQ(s.Send("ready", 0, R"("x":1)"), 200);
  s.collector->Stop();
  EXPECT_EQ(s.inbox.Drain().size(), 2u);  // the submitter died before acting on them
  EXPECT_FALSE(std::filesystem::exists(s.dir.path() + "/results/0/server.log"));
  s.StartCollector();
  const std::vector<StreamItem> items = s.inbox.Drain();
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].kind, StreamItem::Kind::kEntry);
  EXPECT_EQ(items[0].state, "running");
  EXPECT_EQ(items[1].kind, StreamItem::Kind::kResultFile);
  EXPECT_TRUE(items[1].written);
  EXPECT_EQ(Read(s.dir.path() + "/results/0/server.log"), "INFO ready\n");
}

}  // namespace
}  // namespace ix
