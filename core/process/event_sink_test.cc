#include "core/process/event_sink.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <limits>
#include <memory>
#include <string>

#include "tests/support/datagram_listener.h"

namespace ix {
namespace {

using Listener = test::DatagramListener;

std::string SocketPath(const char* tag) {
  return "/tmp/ix-ev-" + std::to_string(::getpid()) + "-" + tag + ".sock";
}

TEST(EventSink, EachEventIsOneJsonDatagram) {
  const std::string path = SocketPath("a");
  Listener agent(path);
  EventSink sink(path);
  sink.Send("started", "12.0", {{"process", "engine"}}, {{"pid", "4242"}});
  sink.Send("placement", "12.0", {}, {{"binding", R"({"cpus":"0-3","numa":0})"}});
  EXPECT_EQ(sink.sent(), 2u);
  EXPECT_EQ(sink.dropped(), 0u);

  rapidjson::Document d;
  const std::string first = agent.Receive();
  d.Parse(first.c_str());
  ASSERT_FALSE(d.HasParseError()) << first;
  EXPECT_STREQ(d["event"].GetString(), "started");
  EXPECT_STREQ(d["step"].GetString(), "12.0");
  EXPECT_STREQ(d["process"].GetString(), "engine");
  EXPECT_EQ(d["pid"].GetInt(), 4242);
  EXPECT_GT(d["time"].GetDouble(), 1.7e9);
  const std::string second = agent.Receive();
  d.Parse(second.c_str());
  ASSERT_FALSE(d.HasParseError()) << second;
  EXPECT_EQ(d["binding"]["numa"].GetInt(), 0);
}

TEST(EventSink, EventsCarryIdsAndTheirEntry) {
  const std::string path = SocketPath("ids");
  Listener agent(path);
  EventSink sink(path);
  sink.Send("started", "7.0");
  sink.SetEntry("sw-1", 12);
  sink.Send("ready", "7.0");
  rapidjson::Document d;
  d.Parse(agent.Receive().c_str());
  EXPECT_STREQ(d["id"].GetString(), "7.0:1");
  EXPECT_FALSE(d.HasMember("sweep"));
  d.Parse(agent.Receive().c_str());
  EXPECT_STREQ(d["id"].GetString(), "7.0:2");
  EXPECT_STREQ(d["sweep"].GetString(), "sw-1");
  EXPECT_EQ(d["entry"].GetInt(), 12);
}

TEST(EventSink, ADescriptorGoesAlong) {
  const std::string path = SocketPath("fd");
  Listener agent(path);
  EventSink sink(path);
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  EXPECT_TRUE(sink.Send("telemetry", "7.0", {}, {}, pipe_fds[1]));
  ::close(pipe_fds[1]);
  int got = -1;
  agent.Receive(&got);
  ASSERT_GE(got, 0);
  ASSERT_EQ(::write(got, "x", 1), 1);  // the receiver writes into the sender's pipe
  ::close(got);
  char c = 0;
  EXPECT_EQ(::read(pipe_fds[0], &c, 1), 1);
  EXPECT_EQ(c, 'x');
  ::close(pipe_fds[0]);
}

// slurmstepd connects on the host and ix-stepd inherits the descriptor; once
// the agent restarts (a new socket at the same path), the path is used.
TEST(EventSink, AConnectedDescriptorFallsBackToThePath) {
  const std::string path = SocketPath("conn");
  auto connected = [&] {
    const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    return fd;
  };
  auto first = std::make_unique<Listener>(path);
  EventSink sink(connected(), path);
  EXPECT_TRUE(sink.Send("started", "8.0"));
  EXPECT_NE(first->Receive().find("\"8.0:1\""), std::string::npos);
  first.reset();
  Listener restarted(path);
  EXPECT_TRUE(sink.Send("ready", "8.0"));
  EXPECT_NE(restarted.Receive().find("\"8.0:2\""), std::string::npos);
  EXPECT_EQ(sink.dropped(), 0u);
}

TEST(EventSink, NoAgentCostsNothingButIsCounted) {
  EventSink sink(SocketPath("missing"));
  sink.Send("ready", "1.0");
  sink.Send("finished", "1.0");
  EXPECT_EQ(sink.sent(), 0u);
  EXPECT_EQ(sink.dropped(), 2u);
  EXPECT_NE(sink.last_error().find("No such file"), std::string::npos) << sink.last_error();

  EventSink none;  // no socket configured: nothing sent, nothing dropped
  none.Send("ready", "1.0");
  EXPECT_FALSE(none.enabled());
  EXPECT_EQ(none.dropped(), 0u);
}

TEST(EventSink, StringsAreEscaped) {
  const std::string j = EventJson("failure", "3.1", 1.5, {{"reason", "said \"no\"\n"}}, {});
  rapidjson::Document d;
  d.Parse(j.c_str());
  ASSERT_FALSE(d.HasParseError()) << j;
  EXPECT_STREQ(d["reason"].GetString(), "said \"no\"\n");
}

// RapidJSON's writer emits nothing for NaN or infinity, which left
// `"time":}` (found by fuzz/event_json_fuzz).
TEST(EventSink, TimeThatIsNotFiniteIsNull) {
  for (double t : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    const std::string j = EventJson("ready", "3.1", t, {{"k", "v"}}, {});
    rapidjson::Document d;
    d.Parse(j.c_str());
    ASSERT_FALSE(d.HasParseError()) << j;
    EXPECT_TRUE(d["time"].IsNull()) << j;
    EXPECT_STREQ(d["k"].GetString(), "v");
  }
}

}  // namespace
}  // namespace ix
