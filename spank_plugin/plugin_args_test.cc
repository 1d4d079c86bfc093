#include "spank_plugin/plugin_args.h"

#include <gtest/gtest.h>

namespace ix {
namespace {

std::string ErrorOf(const std::vector<std::string>& args) {
  auto r = ParsePluginArgs(args);
  return r.ok() ? "" : r.error().message;
}

TEST(PluginArgs, Defaults) {
  const PluginArgs a = ParsePluginArgs({}).value();
  EXPECT_EQ(a.recipe_dir, BuiltinRecipeDir());
  EXPECT_EQ(a.port_range.ToString(), "20000-29999");
  EXPECT_EQ(a.lease_dir, "/run/inferencex/ports");
  EXPECT_EQ(a.run_dir, "/run/inferencex/steps");
  EXPECT_EQ(a.agent_socket, "");
  EXPECT_EQ(a.memlock.mode, MemlockSetting::Mode::kUnlimited);
  EXPECT_EQ(a.topology, "");
}

TEST(PluginArgs, EveryKey) {
  const PluginArgs a = ParsePluginArgs({"recipe_dir=/etc/ix", "port_range=21000-21999",
                                        "lease_dir=/run/l", "run_dir=/run/s",
                                        "agent_socket=/run/ix/agent.sock", "memlock=1048576",
                                        "topology=/etc/ix/b300.xml"})
                           .value();
  EXPECT_EQ(a.recipe_dir, "/etc/ix");
  EXPECT_EQ(a.port_range.lo, 21000);
  EXPECT_EQ(a.port_range.hi, 21999);
  EXPECT_EQ(a.lease_dir, "/run/l");
  EXPECT_EQ(a.run_dir, "/run/s");
  EXPECT_EQ(a.agent_socket, "/run/ix/agent.sock");
  EXPECT_EQ(a.memlock.mode, MemlockSetting::Mode::kBytes);
  EXPECT_EQ(a.memlock.bytes, 1048576u);
  EXPECT_EQ(a.topology, "/etc/ix/b300.xml");
  EXPECT_EQ(ParsePluginArgs({"memlock=keep"}).value().memlock.mode, MemlockSetting::Mode::kKeep);
}

TEST(PluginArgs, BadArgumentsNameTheArgumentAndTheChoices) {
  EXPECT_EQ(ErrorOf({"recipe_dri=/x"}),
            "plugstack.conf argument 'recipe_dri=/x': unknown key 'recipe_dri'; keys: recipe_dir, "
            "port_range, lease_dir, run_dir, agent_socket, memlock, topology, stepd");
  EXPECT_NE(ErrorOf({"recipe_dir"}).find("expected KEY=VALUE"), std::string::npos);
  EXPECT_NE(ErrorOf({"recipe_dir="}).find("expected KEY=VALUE"), std::string::npos);
  EXPECT_NE(ErrorOf({"lease_dir=relative"}).find("must be an absolute path"), std::string::npos);
  EXPECT_NE(ErrorOf({"port_range=29999-20000"}).find("reversed"), std::string::npos);
  EXPECT_NE(ErrorOf({"memlock=lots"}).find("expected unlimited, keep or a number of bytes"),
            std::string::npos);
  EXPECT_NE(ErrorOf({"memlock=-5"}).find("expected unlimited"), std::string::npos);
}

// strtoull skips leading white space and takes a sign: "\v-5" was 2^64 - 5
// bytes (found by fuzz/plugin_args_fuzz). Only decimal digits are a number.
TEST(PluginArgs, MemlockIsOnlyDecimalDigits) {
  for (const char* v : {"memlock=\v-5", "memlock=+5", "memlock= 5", "memlock=5 "}) {
    EXPECT_NE(ErrorOf({v}).find("expected unlimited, keep or a number of bytes"), std::string::npos) << v;
  }
}

}  // namespace
}  // namespace ix
