#include "spank_plugin/plugin_args.h"

#include <gtest/gtest.h>

namespace ix {
namespace {

TEST(PluginArgs, DefaultsAndRecipeDir) {
  EXPECT_EQ(ParsePluginArgs({}).value().recipe_dir, BuiltinRecipeDir());
  EXPECT_EQ(ParsePluginArgs({"recipe_dir=/etc/ix"}).value().recipe_dir, "/etc/ix");
}

TEST(PluginArgs, UnknownOrMalformedIsAnError) {
  auto r = ParsePluginArgs({"recipe_dri=/x"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("unknown key 'recipe_dri'; keys: recipe_dir"), std::string::npos);
  EXPECT_FALSE(ParsePluginArgs({"recipe_dir"}).ok());
  EXPECT_FALSE(ParsePluginArgs({"recipe_dir="}).ok());
}

}  // namespace
}  // namespace ix
