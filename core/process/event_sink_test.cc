#include "core/process/event_sink.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <limits>
#include <string>

namespace ix {
namespace {

// A datagram socket standing in for the node agent.
class Listener {
 public:
  explicit Listener(const std::string& path) : path_(path) {
    ::unlink(path.c_str());
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    timeval tv{2, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~Listener() {
    ::close(fd_);
    ::unlink(path_.c_str());
  }
  std::string Receive() {
    char buf[65536];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
  }

 private:
  std::string path_;
  int fd_ = -1;
};

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
