#include "core/process/tcp_peers.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace ix {
namespace {

// Lines as the kernel writes them on a little-endian machine.
constexpr const char* kTcp =
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
    "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 1 1\n"
    "   1: 0B004D0A:C350 0A004D0A:7530 01 00000000:00000000 00:00000000 00000000  1000        0 2 1\n"
    "   2: 0B004D0A:C351 0C004D0A:7530 06 00000000:00000000 00:00000000 00000000  1000        0 3 1\n";

TEST(TcpPeersTest, FindsAnEstablishedConnectionByRemoteAddress) {
  EXPECT_TRUE(TableHasEstablishedTo(kTcp, "10.77.0.10"));
}

TEST(TcpPeersTest, IgnoresListenersOtherStatesAndOtherPeers) {
  EXPECT_FALSE(TableHasEstablishedTo(kTcp, "127.0.0.1"));   // a listener (0A)
  EXPECT_FALSE(TableHasEstablishedTo(kTcp, "10.77.0.12"));  // TIME_WAIT (06)
  EXPECT_FALSE(TableHasEstablishedTo(kTcp, "10.77.0.11"));  // only a local address
}

TEST(TcpPeersTest, MatchesIpv4InTcp6AsV4Mapped) {
  const char* tcp6 =
      "  sl  local_address                         remote_address                        st\n"
      "   0: 0000000000000000FFFF00000B004D0A:C350 0000000000000000FFFF00000A004D0A:7530 01 0\n";
  EXPECT_TRUE(TableHasEstablishedTo(tcp6, "10.77.0.10"));
  EXPECT_FALSE(TableHasEstablishedTo(tcp6, "10.77.0.11"));
}

TEST(TcpPeersTest, SkipsMalformedLinesAndRefusesNonNumericAddresses) {
  EXPECT_FALSE(TableHasEstablishedTo("garbage\n 0: zz:1 XYZ:2 01\n", "10.0.0.1"));
  EXPECT_FALSE(TableHasEstablishedTo(kTcp, "node-1"));
  Result<bool> r = HasEstablishedTo("node-1");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("not a numeric"), std::string::npos);
}

// A real connection over loopback is seen in this namespace's table.
TEST(TcpPeersTest, SeesALiveLoopbackConnection) {
  const int server = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(0x7f000002);  // 127.0.0.2: nothing else talks to it
  ASSERT_EQ(::bind(server, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(server, 1), 0);
  socklen_t len = sizeof a;
  ::getsockname(server, reinterpret_cast<sockaddr*>(&a), &len);
  Result<bool> before = HasEstablishedTo("127.0.0.2");
  ASSERT_TRUE(before);
  EXPECT_FALSE(before.value());
  const int client = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_EQ(::connect(client, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  Result<bool> after = HasEstablishedTo("127.0.0.2");
  ASSERT_TRUE(after);
  EXPECT_TRUE(after.value());
  ::close(client);
  ::close(server);
}

TEST(TcpPeers, KernelEndpointsInTheUsualNotation) {
  EXPECT_EQ(KernelEndpointText("0100007F:1F90"), "127.0.0.1:8080");
  EXPECT_EQ(KernelEndpointText("00000000000000000000000001000000:0050"), "[::1]:80");
  EXPECT_EQ(KernelEndpointText("0100007F"), "");
  EXPECT_EQ(KernelEndpointText("0100007G:1F90"), "");
  EXPECT_EQ(KernelEndpointText("0100007F:12345"), "");
}

}  // namespace
}  // namespace ix
