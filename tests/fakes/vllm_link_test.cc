#include "vllm_link.h"

#include <gtest/gtest.h>

#include <string>

#include <sys/socket.h>
#include <unistd.h>

#include "fake_common.h"

namespace ixfake::vllm {
namespace {

// The port of a listening socket from listen_tcp("127.0.0.1", 0).
int PortOf(int fd) {
  std::string name = local_name(fd);
  return std::stoi(name.substr(name.rfind(':') + 1));
}

// A connected pair over loopback: the accepted end and the connecting one.
struct Pair {
  int listener = -1;
  int accepted = -1;
  int connected = -1;
};

Pair Connect() {
  Pair p;
  std::string error;
  p.listener = listen_tcp("127.0.0.1", 0, error);
  EXPECT_GE(p.listener, 0) << error;
  p.connected = connect_tcp("127.0.0.1", PortOf(p.listener), 2, error);
  EXPECT_GE(p.connected, 0) << error;
  p.accepted = ::accept(p.listener, nullptr, nullptr);
  EXPECT_GE(p.accepted, 0);
  return p;
}

TEST(VllmLink, LinesGoBothWaysAndNameTheEnds) {
  Pair p = Connect();
  LineSocket a(p.accepted);
  LineSocket b(p.connected);
  EXPECT_EQ(peer_name(p.accepted), local_name(p.connected));
  ASSERT_TRUE(b.send_line("HELLO a"));
  ASSERT_TRUE(b.send_line("two\nlines"));  // a newline inside a line is sent as a space
  std::string line, error;
  ASSERT_EQ(a.read_line(line, now_s() + 2, error), LineSocket::Read::kLine);
  EXPECT_EQ(line, "HELLO a");
  ASSERT_EQ(a.read_line(line, now_s() + 2, error), LineSocket::Read::kLine);
  EXPECT_EQ(line, "two lines");
  ASSERT_TRUE(a.send_line("WELCOME"));
  ASSERT_EQ(b.read_line(line, -1, error), LineSocket::Read::kLine);
  EXPECT_EQ(line, "WELCOME");
  ::close(p.listener);
}

TEST(VllmLink, TimeoutEofAndTooLong) {
  Pair p = Connect();
  LineSocket a(p.accepted);
  std::string line, error;
  EXPECT_EQ(a.read_line(line, now_s() + 0.05, error), LineSocket::Read::kTimeout);
  std::string big(kMaxLineBytes + 10, 'x');
  ASSERT_EQ(::send(p.connected, big.data(), big.size(), 0), static_cast<ssize_t>(big.size()));
  EXPECT_EQ(a.read_line(line, now_s() + 2, error), LineSocket::Read::kTooLong);
  Pair q = Connect();
  LineSocket c(q.accepted);
  ::close(q.connected);
  EXPECT_EQ(c.read_line(line, now_s() + 2, error), LineSocket::Read::kClosed);
  EXPECT_EQ(error, "connection closed (EOF)");
  ::close(p.connected);
  ::close(p.listener);
  ::close(q.listener);
}

TEST(VllmLink, RefusedAndTakenPortsSayWhy) {
  std::string error;
  int l = listen_tcp("127.0.0.1", 0, error);
  ASSERT_GE(l, 0) << error;
  const int port = PortOf(l);
  EXPECT_EQ(listen_tcp("127.0.0.1", port, error), -1);
  EXPECT_EQ(error, "Address already in use");
  ::close(l);
  EXPECT_EQ(connect_tcp("127.0.0.1", port, 1, error), -1);  // nothing listens there now
  EXPECT_EQ(error, "Connection refused");
  EXPECT_EQ(listen_tcp("no-such-host.invalid", 1, error), -1);
  EXPECT_NE(error.find("cannot resolve no-such-host.invalid"), std::string::npos);
}

}  // namespace
}  // namespace ixfake::vllm
