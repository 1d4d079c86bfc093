#include "submitter/sweep/stream_options.h"

#include <gtest/gtest.h>

namespace ix {
namespace {

// The options as `ixsubmit sweep` takes them, "--name=value" or "--name value".
Result<StreamOptions> Parse(const std::vector<std::string>& args) {
  StreamOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string a = args[i];
    auto value = [&]() { return a.find('=') != std::string::npos ? a.substr(a.find('=') + 1) : args[++i]; };
    if (!TakeStreamOption(a, value, o)) return Error{"not a stream option: " + a};
  }
  if (Status s = CheckStreamOptions(o); !s) return s.error();
  return o;
}

std::string ErrorOf(const std::vector<std::string>& args) {
  Result<StreamOptions> o = Parse(args);
  return o ? std::string("(accepted)") : o.error().message;
}

TEST(StreamOptions, DefaultsListenEverywhereOnAFreePortWithTheDefaultSocket) {
  const StreamOptions o = Parse({}).value();
  EXPECT_EQ(o.listen, "0.0.0.0:0");
  EXPECT_EQ(o.agent_socket, "/run/inferencex/agent.sock");
  EXPECT_FALSE(o.no_collector);
  EXPECT_EQ(o.node_results, "");
  EXPECT_EQ(CollectorUrlFor(o, "login1", 41234), "http://login1:41234");
}

TEST(StreamOptions, TakesEachOptionInBothForms) {
  const StreamOptions o = Parse({"--collector-listen", "10.0.0.5:9478", "--collector-url=https://proxy.example:443/ix",
                                 "--node-results", "/tmp/ix-results", "--agent-socket=/run/ix/a.sock"})
                              .value();
  EXPECT_EQ(o.listen, "10.0.0.5:9478");
  EXPECT_EQ(CollectorUrlFor(o, "login1", 9478), "https://proxy.example:443/ix");
  EXPECT_EQ(o.node_results, "/tmp/ix-results");
  EXPECT_EQ(o.agent_socket, "/run/ix/a.sock");
  EXPECT_TRUE(Parse({"--no-collector"}).value().no_collector);
  StreamOptions other;
  EXPECT_FALSE(TakeStreamOption("--partition", [] { return std::string("x"); }, other));
  EXPECT_TRUE(other.given.empty());
}

TEST(StreamOptions, ListenAddressesParseWithIpv6InBrackets) {
  const ListenAddress v4 = ParseListenAddress("0.0.0.0:0", "--collector-listen").value();
  EXPECT_EQ(v4.host, "0.0.0.0");
  EXPECT_EQ(v4.port, 0);
  const ListenAddress v6 = ParseListenAddress("[::]:9478", "--collector-listen").value();
  EXPECT_EQ(v6.host, "::");
  EXPECT_EQ(v6.port, 9478);
  EXPECT_EQ(v6.ToString(), "[::]:9478");
  EXPECT_EQ(ParseListenAddress("login1:65535", "x").value().ToString(), "login1:65535");
  for (const char* bad : {"9478", "login1:", ":9478", "login1:65536", "login1:-1", "::1:9478", "[::1]9478",
                          "[nothost]:1", "a b:1", "login1:12x"}) {
    Result<ListenAddress> a = ParseListenAddress(bad, "--collector-listen");
    ASSERT_FALSE(a) << bad;
    EXPECT_NE(a.error().message.find("argument --collector-listen: '" + std::string(bad) + "' is not ADDR:PORT"),
              std::string::npos)
        << a.error().message;
  }
}

TEST(StreamOptions, ErrorsNameTheOptionAndWhatItAllows) {
  EXPECT_NE(ErrorOf({"--collector-url", "ftp://login1:21"}).find("argument --collector-url: 'ftp://login1:21' is "
                                                                 "not an http:// or https:// URL"),
            std::string::npos);
  EXPECT_NE(ErrorOf({"--collector-url", "http://"}).find("argument --collector-url"), std::string::npos);
  EXPECT_NE(ErrorOf({"--node-results", "results"}).find("argument --node-results: 'results' must be an absolute "
                                                        "path"),
            std::string::npos);
  EXPECT_NE(ErrorOf({"--node-results", "/tmp/../etc"}).find("argument --node-results"), std::string::npos);
  EXPECT_NE(ErrorOf({"--node-results", "/tmp/a:b"}).find("container mount"), std::string::npos);
  EXPECT_NE(ErrorOf({"--node-results="}).find("argument --node-results: expected a value"), std::string::npos);
  EXPECT_NE(ErrorOf({"--agent-socket", "agent.sock"}).find("argument --agent-socket: 'agent.sock' must be an "
                                                           "absolute path"),
            std::string::npos);
  EXPECT_NE(ErrorOf({"--agent-socket", "/" + std::string(120, 'a')}).find("longer than a unix socket path"),
            std::string::npos);
}

TEST(StreamOptions, NoCollectorRefusesTheCollectorsOptions) {
  EXPECT_EQ(ErrorOf({"--no-collector", "--node-results", "/tmp/r"}),
            "argument --node-results: not with --no-collector (results reach the sweep directory only through the "
            "collector)");
  EXPECT_EQ(ErrorOf({"--collector-url", "http://a:1", "--no-collector"}),
            "argument --collector-url: not with --no-collector (there is no collector)");
  EXPECT_EQ(ErrorOf({"--no-collector", "--collector-listen", "0.0.0.0:1"}),
            "argument --collector-listen: not with --no-collector (there is no collector)");
  EXPECT_EQ(ErrorOf({"--no-collector", "--agent-socket", "/run/a.sock"}), "(accepted)");
}

TEST(StreamOptions, ThisHostHasAName) { EXPECT_FALSE(ThisHostName().empty()); }

}  // namespace
}  // namespace ix
