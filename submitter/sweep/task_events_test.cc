#include "submitter/sweep/task_events.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "core/base/file_text.h"
#include "tests/support/datagram_listener.h"
#include "tests/support/test.h"

namespace ix {
namespace {

struct Fixture {
  test::TempDir dir{"ix-task-events"};
  SweepManifest m;
  Fixture() {
    m.sweep_id = "sw-9";
    m.stream.agent_socket = dir.path() + "/agent.sock";
  }
};

rapidjson::Document Parse(const std::string& text) {
  rapidjson::Document d;
  d.Parse(text.c_str());
  EXPECT_FALSE(d.HasParseError()) << text;
  return d;
}

std::string ReadAll(int fd) {
  std::string out;
  char buf[256];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  return out;
}

TEST(TaskReporter, WithoutAnAgentNothingIsSentOrDropped) {
  Fixture f;
  TaskReporter r(f.m, 3, "77.batch");
  EXPECT_FALSE(r.enabled());
  r.State("running");
  EXPECT_EQ(r.Results(f.dir.path()), 0u);
  EXPECT_EQ(r.dropped(), 0u);
}

TEST(TaskReporter, StatesNameTheEntry) {
  Fixture f;
  test::DatagramListener agent(f.m.stream.agent_socket);
  TaskReporter r(f.m, 3, "77.batch");
  r.State("running");
  r.State("failed", 1, "engine exited", "engine");
  rapidjson::Document d = Parse(agent.Receive());
  EXPECT_STREQ(d["event"].GetString(), "entry");
  EXPECT_STREQ(d["id"].GetString(), "77.batch:1");
  EXPECT_STREQ(d["sweep"].GetString(), "sw-9");
  EXPECT_EQ(d["entry"].GetInt(), 3);
  EXPECT_STREQ(d["state"].GetString(), "running");
  EXPECT_FALSE(d.HasMember("exit_code"));
  d = Parse(agent.Receive());
  EXPECT_STREQ(d["state"].GetString(), "failed");
  EXPECT_EQ(d["exit_code"].GetInt(), 1);
  EXPECT_STREQ(d["reason"].GetString(), "engine exited");
}

// Each regular file goes as a descriptor the agent reads, those one
// directory down as DIR/NAME (AIPerf's artifacts, without what InferenceX
// leaves out of its uploads); links are not followed or sent, nor is a
// directory two levels down.
TEST(TaskReporter, ResultsGoAsDescriptors) {
  Fixture f;
  const std::string rdir = f.dir.path() + "/r";
  ASSERT_EQ(::mkdir(rdir.c_str(), 0755), 0);
  ASSERT_TRUE(WriteFileAtomic(rdir + "/b.json", "{}").ok());
  ASSERT_TRUE(WriteFileAtomic(rdir + "/a.log", "log\n").ok());
  ASSERT_EQ(::symlink("/etc/passwd", (rdir + "/link").c_str()), 0);
  ASSERT_EQ(::mkdir((rdir + "/sub").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((rdir + "/sub/deeper").c_str(), 0755), 0);
  ASSERT_TRUE(WriteFileAtomic(rdir + "/sub/deeper/no.json", "{}").ok());
  ASSERT_TRUE(WriteFileAtomic(rdir + "/sub/c.json", "{}").ok());
  ASSERT_TRUE(WriteFileAtomic(rdir + "/sub/inputs.json", "{}").ok());
  ASSERT_TRUE(WriteFileAtomic(rdir + "/sub/profile_export_raw.jsonl", "{}").ok());
  ASSERT_EQ(::symlink("/etc", (rdir + "/etc").c_str()), 0);
  test::DatagramListener agent(f.m.stream.agent_socket);
  TaskReporter r(f.m, 0, "5.batch");
  EXPECT_EQ(r.Results(rdir), 3u);
  for (const char* expected : {"a.log", "b.json", "sub/c.json"}) {
    int fd = -1;
    rapidjson::Document d = Parse(agent.Receive(&fd));
    EXPECT_STREQ(d["event"].GetString(), "result");
    EXPECT_STREQ(d["name"].GetString(), expected);
    ASSERT_GE(fd, 0);
    EXPECT_EQ(ReadAll(fd), std::string(expected) == "a.log" ? "log\n" : "{}") << expected;
    ::close(fd);
  }
}

TEST(TaskReporter, TheRouteCarriesTheTokenFileNotTheToken) {
  Fixture f;
  f.m.stream.collector_url = "http://submit:9478";
  f.m.stream.token_file = f.dir.path() + "/collector.token";
  ASSERT_TRUE(WriteFileAtomic(f.m.stream.token_file, "s3cret\n").ok());
  test::DatagramListener agent(f.m.stream.agent_socket);
  TaskReporter r(f.m, 0, "5.batch");
  ASSERT_TRUE(r.Route());
  int fd = -1;
  const std::string text = agent.Receive(&fd);
  EXPECT_EQ(text.find("s3cret"), std::string::npos) << text;
  rapidjson::Document d = Parse(text);
  EXPECT_STREQ(d["event"].GetString(), "route");
  EXPECT_STREQ(d["collector"].GetString(), "http://submit:9478");
  ASSERT_GE(fd, 0);
  EXPECT_EQ(ReadAll(fd), "s3cret\n");
  ::close(fd);

  f.m.stream.collector_url.clear();  // no collector: no route
  EXPECT_FALSE(r.Route());
}

}  // namespace
}  // namespace ix
