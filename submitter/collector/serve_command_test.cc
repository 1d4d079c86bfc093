#include "submitter/collector/serve_command.h"

#include <gtest/gtest.h>

namespace ix {
namespace {

TEST(ListenAddress, HostPortAndBracketedIpv6) {
  Result<ListenAddress> a = ParseListenAddress("127.0.0.1:9478");
  ASSERT_TRUE(a);
  EXPECT_EQ(a.value().host, "127.0.0.1");
  EXPECT_EQ(a.value().port, 9478);
  a = ParseListenAddress("[::1]:0");
  ASSERT_TRUE(a);
  EXPECT_EQ(a.value().host, "::1");
  EXPECT_EQ(a.value().port, 0);
  EXPECT_EQ(ParseListenAddress("collector.example:65535").value().host, "collector.example");
  for (const char* bad : {"", "127.0.0.1", ":9478", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1", "::1:9478",
                          "[::1]9478", "[::1]:", "[]:1", "127.0.0.1:9478x", "[::1"}) {
    Result<ListenAddress> r = ParseListenAddress(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().message,
              "must be HOST:PORT or [IPV6]:PORT with PORT 0 to 65535, e.g. 127.0.0.1:9478");
  }
}

TEST(ListenAddress, FormatsAsItParses) {
  EXPECT_EQ(FormatListenAddress("::", 80), "[::]:80");
  EXPECT_EQ(FormatListenAddress("0.0.0.0", 9478), "0.0.0.0:9478");
}

TEST(ServeCommandLine, DefaultsAndFlags) {
  Result<ServeCommandLine> c = ParseServeCommandLine({"--token-file", "/etc/ix/token"});
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c.value().listen.host, "127.0.0.1");
  EXPECT_EQ(c.value().listen.port, 9478);
  EXPECT_FALSE(c.value().db);
  EXPECT_EQ(c.value().threads, 8u);
  c = ParseServeCommandLine({"--listen=0.0.0.0:1234", "--db", "/tmp/x.db", "--token-file=/t", "--threads", "16"});
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c.value().listen.host, "0.0.0.0");
  EXPECT_EQ(c.value().listen.port, 1234);
  EXPECT_EQ(c.value().db, "/tmp/x.db");
  EXPECT_EQ(c.value().token_file, "/t");
  EXPECT_EQ(c.value().threads, 16u);
  EXPECT_TRUE(ParseServeCommandLine({"--help"}).value().help);
}

TEST(ServeCommandLine, MisuseNamesTheFlag) {
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{}, "argument --token-file: required"},
      {{"--token-file"}, "argument --token-file: expected a value"},
      {{"--token-file="}, "argument --token-file: expected a path"},
      {{"--token-file", "t", "--listen", "9478"}, "argument --listen: must be HOST:PORT"},
      {{"--token-file", "t", "--threads", "0"}, "argument --threads: must be a whole number from 1 to 256"},
      {{"--token-file", "t", "--threads", "257"}, "argument --threads: must be a whole number from 1 to 256"},
      {{"--token-file", "t", "--db="}, "argument --db: expected a path"},
      {{"--token-file", "t", "--token", "secret"}, "unrecognized argument: --token"},
      {{"--token-file", "t", "extra"}, "unrecognized argument: extra"},
  };
  for (const auto& [args, want] : cases) {
    Result<ServeCommandLine> c = ParseServeCommandLine(args);
    ASSERT_FALSE(c) << want;
    EXPECT_EQ(c.error().message.rfind(want, 0), 0u) << c.error().message;
  }
}

}  // namespace
}  // namespace ix
