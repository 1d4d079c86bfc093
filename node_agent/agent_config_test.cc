#include "node_agent/agent_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/base/file_text.h"
#include "tests/support/test.h"

namespace ix {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// Every field of `c` as "key=value" words, keys as the file spells them, in
// its order: one comparison shows every difference.
std::string Fields(const AgentConfig& c) {
  return "socket=" + c.socket + " interval=" + std::to_string(c.interval_s) + " spool=" + c.spool +
         " collector=" + c.collector + " token-file=" + c.token_file + " metrics-listen=" + c.metrics_listen +
         " hang-after=" + std::to_string(c.hang_after_s);
}

// A file sets the keys it names, around comments and blank lines; the
// others keep their documented defaults (all of them for an empty file).
TEST(AgentConfig, AFileSetsItsKeysAndTheOthersKeepTheDocumentedDefaults) {
  const struct {
    const char* text;
    std::string fields;
  } cases[] = {
      {"", "socket=/run/inferencex/agent.sock interval=1 spool=/var/lib/inferencex/spool collector= "
           "token-file= metrics-listen=127.0.0.1:9477 hang-after=60"},
      {"interval = 5\n", "socket=/run/inferencex/agent.sock interval=5 spool=/var/lib/inferencex/spool collector= "
                         "token-file= metrics-listen=127.0.0.1:9477 hang-after=60"},
      {"# the agent of node-7\n"
       "\n"
       "socket = /run/ix/a.sock\n"
       "  interval=5  \n"
       "spool = /srv/spool\r\n"
       "collector = https://collector.example:8443/ix\n"
       "token-file = /etc/inferencex/token\n"
       "\t# an indented comment\n"
       "metrics-listen = [::1]:9100\n"
       "hang-after = 120\n",
       "socket=/run/ix/a.sock interval=5 spool=/srv/spool collector=https://collector.example:8443/ix "
       "token-file=/etc/inferencex/token metrics-listen=[::1]:9100 hang-after=120"},
  };
  for (const auto& [text, fields] : cases) {
    AgentConfig c;
    EXPECT_THAT(ApplyAgentConfigText(c, text, "agent.conf"), IsEmpty()) << text;
    EXPECT_EQ(Fields(c), fields);
    EXPECT_THAT(CheckAgentConfig(c), IsEmpty()) << text;
  }
}

TEST(AgentConfig, EveryProblemIsReportedWithFileLineAndWhatIsAllowed) {
  AgentConfig c;
  const char text[] =
      "interval = 0\n"
      "intervall = 2\n"
      "spool = /a\n"
      "spool = /b\n"
      "just words\n"
      "hang-after = 5\n";
  EXPECT_THAT(ApplyAgentConfigText(c, text, "/etc/inferencex/agent.conf"),
              ElementsAre("/etc/inferencex/agent.conf:1: key 'interval': expected a whole number of seconds from 1 "
                          "to 3600, got '0'",
                          "/etc/inferencex/agent.conf:2: key 'intervall': unknown; the keys are socket, interval, "
                          "spool, collector, token-file, ca-file, metrics-listen, hang-after",
                          "/etc/inferencex/agent.conf:4: key 'spool': given twice (first on line 3); each key at "
                          "most once",
                          "/etc/inferencex/agent.conf:5: expected 'key = value', a '#' comment or a blank line"));
  EXPECT_EQ(c.interval_s, 1) << "a bad line changes nothing";
  EXPECT_EQ(c.spool, "/a");
  EXPECT_EQ(c.hang_after_s, 5) << "the good lines after a bad one still apply";
}

// The value `value` of `key` is refused, naming what the key allows.
void ExpectRefused(const std::string& key, const std::string& value, const std::string& allowed) {
  AgentConfig c;
  const AgentConfig before = c;
  EXPECT_EQ(SetAgentConfigKey(c, key, value), "key '" + key + "': expected " + allowed + ", got '" + value + "'");
  EXPECT_EQ(c.socket, before.socket);
  EXPECT_EQ(c.metrics_listen, before.metrics_listen);
  EXPECT_EQ(c.collector, before.collector);
}

TEST(AgentConfig, ValuesOutsideWhatAKeyAllowsAreRefused) {
  const struct {
    const char* key;
    const char* allowed;
    std::vector<std::string> values;
  } cases[] = {
      {"interval", "a whole number of seconds from 1 to 3600", {"0", "3601", "-1", "1.5", "", " 1", "1s"}},
      {"hang-after", "a whole number of seconds from 1 to 86400", {"86401"}},
      {"socket", "an absolute path of at most 107 bytes (a unix socket address's limit)",
       {"run/agent.sock", "/" + std::string(107, 'a')}},
      {"spool", "an absolute path", {""}},
      {"token-file", "an absolute path", {"token"}},
      {"metrics-listen",
       "ADDR:PORT with an IPv4 address or a bracketed IPv6 address ([::1]) and a port from 0 to 65535 (0: any free "
       "one)",
       {"127.0.0.1", "localhost:9477", "127.0.0.1:65536", "::1:9477", "[::1]", ":9477", "1.2.3:9477"}},
      {"collector",
       "an http:// or https:// URL with a host (a name, an IPv4 address or a bracketed IPv6 address), an optional "
       ":PORT and path, no credentials and no spaces",
       {"collector.example", "ftp://collector.example/", "http://", "https://", "http://a b/",
        "https://user:pw@collector.example/", "http://collector.example:99999/"}},
  };
  for (const auto& [key, allowed, values] : cases) {
    for (const std::string& v : values) ExpectRefused(key, v, allowed);
  }
}

TEST(AgentConfig, TheLimitsThemselvesAreAllowed) {
  AgentConfig c;
  EXPECT_EQ(SetAgentConfigKey(c, "interval", "3600"), "");
  EXPECT_EQ(SetAgentConfigKey(c, "hang-after", "1"), "");
  EXPECT_EQ(SetAgentConfigKey(c, "socket", "/" + std::string(106, 'a')), "");
  EXPECT_EQ(SetAgentConfigKey(c, "metrics-listen", "0.0.0.0:65535"), "");
  EXPECT_EQ(SetAgentConfigKey(c, "metrics-listen", "127.0.0.1:0"), "");  // any free port
  EXPECT_EQ(SetAgentConfigKey(c, "collector", "http://[fd00::1]:8080"), "");
  EXPECT_EQ(c.interval_s, 3600);
  EXPECT_EQ(c.collector, "http://[fd00::1]:8080");
}

TEST(AgentConfig, ACollectorNeedsATokenFile) {
  AgentConfig c;
  c.collector = "https://collector.example/";
  EXPECT_THAT(CheckAgentConfig(c), ElementsAre(HasSubstr("key 'collector' is set but 'token-file' is not")));
  c.token_file = "/etc/inferencex/token";
  EXPECT_THAT(CheckAgentConfig(c), IsEmpty());
}

// ---- the command line ---------------------------------------------------------

class AgentCommandLineTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_.path() + "/" + name;
    EXPECT_TRUE(WriteFileAtomic(path, text).ok());
    return path;
  }
  // The default config file of these tests: absent until written.
  std::string DefaultFile() const { return dir_.path() + "/agent.conf"; }
  Result<AgentCommandLine> Parse(const std::vector<std::string>& args) {
    return ParseAgentCommandLine(args, DefaultFile());
  }

  test::TempDir dir_{"ix-agent-config"};
};

TEST_F(AgentCommandLineTest, AMissingDefaultFileIsFine) {
  Result<AgentCommandLine> line = Parse({"--check"});
  ASSERT_TRUE(line.ok()) << line.error().message;
  EXPECT_TRUE(line.value().check);
  EXPECT_EQ(line.value().config_file, "");
  EXPECT_THAT(line.value().problems, IsEmpty());
  EXPECT_EQ(line.value().config.interval_s, 1);
}

TEST_F(AgentCommandLineTest, AMissingNamedFileIsAProblem) {
  const std::string path = dir_.path() + "/nowhere.conf";
  Result<AgentCommandLine> line = Parse({"--config", path, "--check"});
  ASSERT_TRUE(line.ok()) << line.error().message;
  EXPECT_THAT(line.value().problems, ElementsAre(path + ": cannot read: No such file or directory"));
}

TEST_F(AgentCommandLineTest, TheDefaultFileIsReadAndFlagsOverrideIt) {
  Write("agent.conf", "interval = 5\nspool = /srv/spool\n");
  Result<AgentCommandLine> line = Parse({"--interval", "2", "--once", "--json"});
  ASSERT_TRUE(line.ok()) << line.error().message;
  EXPECT_EQ(line.value().config_file, DefaultFile());
  EXPECT_TRUE(line.value().once);
  EXPECT_EQ(line.value().config.interval_s, 2);
  EXPECT_EQ(line.value().config.spool, "/srv/spool");
  EXPECT_THAT(line.value().problems, IsEmpty());
}

TEST_F(AgentCommandLineTest, ProblemsOfFileFlagsAndKeysTogetherAreAllListed) {
  const std::string path = Write("bad.conf", "collector = https://collector.example/\nhang-after = never\n");
  Result<AgentCommandLine> line = Parse({"--config=" + path, "--metrics-listen", "localhost:80", "--check"});
  ASSERT_TRUE(line.ok()) << line.error().message;
  EXPECT_THAT(line.value().problems,
              ElementsAre(path + ":2: key 'hang-after': expected a whole number of seconds from 1 to 86400, got "
                                 "'never'",
                          HasSubstr("--metrics-listen: expected ADDR:PORT with an IPv4 address"),
                          HasSubstr("key 'collector' is set but 'token-file' is not")));
}

TEST_F(AgentCommandLineTest, AFlagFillsWhatTheFileLacks) {
  const std::string path = Write("c.conf", "collector = https://collector.example/\n");
  Result<AgentCommandLine> line = Parse({"--config", path, "--token-file", "/etc/inferencex/token", "--check"});
  ASSERT_TRUE(line.ok()) << line.error().message;
  EXPECT_THAT(line.value().problems, IsEmpty());
}

TEST_F(AgentCommandLineTest, MisuseIsAnError) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"--bogus"},
           {"--interval"},
           {"--interval", "1", "--interval", "2"},
           {"stray"},
           {"--once"},
           {"--json"},
           {"--check", "--once", "--json"}}) {
    Result<AgentCommandLine> line = Parse(args);
    EXPECT_FALSE(line.ok()) << args[0];
  }
  EXPECT_EQ(Parse({"--once"}).error().message, "--once prints JSON only (so far): add --json");
}

TEST_F(AgentCommandLineTest, HelpListsEveryFlag) {
  Result<AgentCommandLine> line = Parse({"--help"});
  ASSERT_TRUE(line.ok()) << line.error().message;
  EXPECT_TRUE(line.value().help);
  for (const char* flag : {"--config", "--check", "--once", "--json", "--help"}) {
    EXPECT_THAT(line.value().usage, HasSubstr(flag));
  }
  for (const AgentConfigKey& k : AgentConfigKeys()) {
    EXPECT_THAT(line.value().usage, HasSubstr(std::string("--") + k.name + " " + k.value));
  }
}

}  // namespace
}  // namespace ix
