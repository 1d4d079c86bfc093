#include "spank_plugin/step_records.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/support/test.h"

namespace ix {
namespace {

rapidjson::Document Parse(const std::string& text) {
  rapidjson::Document d;
  d.Parse(text.c_str());
  EXPECT_FALSE(d.HasParseError()) << text;
  return d;
}

FailureRecord Record(const std::string& process, const std::string& node, int64_t rank, int64_t ms) {
  return FailureRecord{process, 42, process + " exited with status 1", "last line", node, rank, ms};
}

// Writes `text` as DIR/SUB/failure.json.
void PutRecord(const std::string& dir, const std::string& sub, const std::string& text) {
  std::filesystem::create_directories(dir + "/" + sub);
  std::ofstream(dir + "/" + sub + "/failure.json") << text;
}

TEST(StepRecords, FailureJsonNamesTheProcessAndWhy) {
  const rapidjson::Document d =
      Parse(FailureJson({"engine/EngineCore_DP2", 42, "exited with \"status\" 1", "a\nb", "", -1, 1764990000123}));
  EXPECT_STREQ(d["process"].GetString(), "engine/EngineCore_DP2");
  EXPECT_EQ(d["pid"].GetInt(), 42);
  EXPECT_STREQ(d["reason"].GetString(), "exited with \"status\" 1");
  EXPECT_STREQ(d["log_tail"].GetString(), "a\nb");
  EXPECT_STREQ(d["time"].GetString(), "2025-12-06T03:00:00Z");
  EXPECT_EQ(d["time_unix_ms"].GetInt64(), 1764990000123);
  EXPECT_FALSE(d.HasMember("node"));  // one node: nothing to name
}

TEST(StepRecords, FailureJsonAcrossNodesNamesTheNode) {
  const rapidjson::Document d = Parse(FailureJson(Record("engine", "ixn2", 1, 5)));
  EXPECT_STREQ(d["node"].GetString(), "ixn2");
  EXPECT_EQ(d["node_rank"].GetInt64(), 1);
}

TEST(StepRecords, ARecordReadsBackAsWritten) {
  const FailureRecord f = Record("engine/EngineCore_DP9", "ixn2", 1, 1764990000123);
  Result<FailureRecord> back = ParseFailureJson(FailureJson(f));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back.value().process, f.process);
  EXPECT_EQ(back.value().pid, f.pid);
  EXPECT_EQ(back.value().reason, f.reason);
  EXPECT_EQ(back.value().log_tail, f.log_tail);
  EXPECT_EQ(back.value().node, "ixn2");
  EXPECT_EQ(back.value().node_rank, 1);
  EXPECT_EQ(back.value().unix_ms, f.unix_ms);
}

TEST(StepRecords, AMalformedRecordSaysWhatItNeeds) {
  EXPECT_FALSE(ParseFailureJson("[1]").ok());
  EXPECT_FALSE(ParseFailureJson("{\"process\": \"engine\"").ok());
  Result<FailureRecord> r = ParseFailureJson(R"({"process":"engine","reason":"x","time_unix_ms":"soon"})");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("time_unix_ms"), std::string::npos) << r.error().message;
}

TEST(StepRecords, TheHeadNamesTheNodeThatFailedFirstAndKeepsWhatItSaw) {
  const rapidjson::Document d =
      Parse(FailureJsonAfter(Record("engine/EngineCore_DP9", "ixn2", 1, 100), Record("engine", "ixn1", 0, 130)));
  EXPECT_STREQ(d["node"].GetString(), "ixn2");
  EXPECT_STREQ(d["process"].GetString(), "engine/EngineCore_DP9");
  EXPECT_STREQ(d["seen_on_head"]["node"].GetString(), "ixn1");
  EXPECT_STREQ(d["seen_on_head"]["process"].GetString(), "engine");
  EXPECT_EQ(d["seen_on_head"]["time_unix_ms"].GetInt64(), 130);
}

TEST(StepRecords, TheEarliestNodeFailureOfThisStepUpToTheHeads) {
  test::TempDir dir("ix-records");
  PutRecord(dir.path(), "node1", FailureJson(Record("engine", "ixn2", 1, 1200)));
  PutRecord(dir.path(), "node2", FailureJson(Record("engine/EngineCore_DP20", "ixn3", 2, 1100)));
  PutRecord(dir.path(), "node3", FailureJson(Record("engine", "ixn4", 3, 900)));  // an earlier step's
  PutRecord(dir.path(), "node4", "{not json");
  const int fd = ::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  std::optional<FailureRecord> f = EarliestNodeFailure(fd, 5, 1000, 1300);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->node, "ixn3");
  f = EarliestNodeFailure(fd, 2, 1000, 1300);  // node2/ is not of a 2-node step
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->node, "ixn2");
  EXPECT_FALSE(EarliestNodeFailure(fd, 5, 1000, 1050).has_value());  // the head failed first
  ::close(fd);
}

TEST(StepRecords, ANodeRecordThatArrivesDuringTheWaitIsFound) {
  test::TempDir dir("ix-records");
  const int fd = ::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  EXPECT_FALSE(AwaitNodeFailure(fd, 2, 1000, 1300, std::chrono::milliseconds(0)).has_value());
  std::thread late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    PutRecord(dir.path(), "node1", FailureJson(Record("engine", "ixn2", 1, 1200)));
  });
  std::optional<FailureRecord> f = AwaitNodeFailure(fd, 2, 1000, 1300, std::chrono::seconds(10));
  late.join();
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->node, "ixn2");
  ::close(fd);
}

TEST(StepRecords, ANodeRecordBehindALinkIsNotRead) {
  test::TempDir dir("ix-records");
  PutRecord(dir.path(), "elsewhere", FailureJson(Record("engine", "ixn2", 1, 1200)));
  std::filesystem::create_directory_symlink(dir.path() + "/elsewhere", dir.path() + "/node1");
  std::filesystem::create_directories(dir.path() + "/node2");
  std::filesystem::create_symlink(dir.path() + "/elsewhere/failure.json", dir.path() + "/node2/failure.json");
  const int fd = ::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  EXPECT_FALSE(EarliestNodeFailure(fd, 3, 0, 2000).has_value());
  ::close(fd);
}

TEST(StepRecords, ObtainedJsonHasWhatEachProcessGotOrWhy) {
  ProcBinding b;
  b.cpus = {0, 1, 2, 3};
  b.mems_allowed = {0};
  b.mempolicy = "bind:0";
  const rapidjson::Document d = Parse(ObtainedJson({{"engine", b}, {"router", Error{"gone"}}}));
  EXPECT_STREQ(d["engine"]["cpus"].GetString(), "0-3");
  EXPECT_STREQ(d["engine"]["mempolicy"].GetString(), "bind:0");
  EXPECT_STREQ(d["router"]["error"].GetString(), "gone");
}

}  // namespace
}  // namespace ix
