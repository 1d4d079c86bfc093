#include "spank_plugin/step_records.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

namespace ix {
namespace {

rapidjson::Document Parse(const std::string& text) {
  rapidjson::Document d;
  d.Parse(text.c_str());
  EXPECT_FALSE(d.HasParseError()) << text;
  return d;
}

TEST(StepRecords, FailureJsonNamesTheProcessAndWhy) {
  const rapidjson::Document d = Parse(FailureJson("engine/EngineCore_DP2", 42, "exited with \"status\" 1", "a\nb"));
  EXPECT_STREQ(d["process"].GetString(), "engine/EngineCore_DP2");
  EXPECT_EQ(d["pid"].GetInt(), 42);
  EXPECT_STREQ(d["reason"].GetString(), "exited with \"status\" 1");
  EXPECT_STREQ(d["log_tail"].GetString(), "a\nb");
  EXPECT_TRUE(d.HasMember("time"));
  EXPECT_FALSE(d.HasMember("node"));  // one node: nothing to name
}

TEST(StepRecords, FailureJsonAcrossNodesNamesTheNode) {
  const rapidjson::Document d = Parse(FailureJson("engine", 7, "lost", "", "ixn2", 1));
  EXPECT_STREQ(d["node"].GetString(), "ixn2");
  EXPECT_EQ(d["node_rank"].GetInt64(), 1);
}

TEST(StepRecords, ObtainedJsonHasWhatEachProcessGotOrWhy) {
  ProcBinding b;
  b.cpus = {0, 1, 2, 3};
  b.mems_allowed = {0};
  b.mempolicy = "bind:0";
  const rapidjson::Document d = Parse(ObtainedJson({{"engine", b}, {"router", Error{"gone"}}}));
  EXPECT_STREQ(d["engine"]["cpus"].GetString(), "0-3");
  EXPECT_STREQ(d["engine"]["mempolicy"].GetString(), "bind:0");
  EXPECT_STREQ(d["router"]["error"].GetString(), "gone");
}

}  // namespace
}  // namespace ix
