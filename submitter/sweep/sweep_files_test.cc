// SweepManifestFromJson on sweep.json text that is JSON but not what
// WriteSweepFiles writes (cases found by fuzz/sweep_json_fuzz).
#include "submitter/sweep/sweep_files.h"

#include <gtest/gtest.h>

#include <string>

namespace ix {
namespace {

const std::string kHead = R"({"mode":"full-sweep-enabled","client":["c"],)";

// A job or an entry that is not an object was read with HasMember, which
// RapidJSON leaves undefined for anything but an object.
TEST(SweepManifestJson, AJobThatIsNotAnObjectIsAnError) {
  Result<SweepManifest> m = SweepManifestFromJson(kHead + R"("jobs":[{"key":"canary"},1],"entries":[]})", "s.json");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().message, "s.json: field 'jobs[1]' must be an object");
}

TEST(SweepManifestJson, AnEntryThatIsNotAnObjectIsAnError) {
  Result<SweepManifest> m = SweepManifestFromJson(kHead + R"("jobs":[],"entries":["x"]})", "s.json");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().message, "s.json: field 'entries[0]' must be an object");
}

// JobName, ScriptPath and the array task index a job's entries and cut
// "bucket:" off its key without checking again: a job naming an entry the
// file lacks was read out of bounds, a short key threw std::out_of_range.
TEST(SweepManifestJson, AJobMustNameEntriesOfTheFile) {
  const std::string entries = R"("entries":[{"index":0,"job":"canary"}]})";
  auto error = [&](const std::string& jobs) {
    Result<SweepManifest> m = SweepManifestFromJson(kHead + R"("jobs":)" + jobs + "," + entries, "s.json");
    return m.ok() ? std::string() : m.error().message;
  };
  EXPECT_EQ(error(R"([{"key":"canary","canary":true,"entries":[0]},{"key":"bucket:a","entries":[0,1]}])"),
            "s.json: field 'jobs[1].entries[1]' is not the index of an entry (the file has 1)");
  EXPECT_EQ(error(R"([{"key":"bucket:a","entries":["x"]}])"),
            "s.json: field 'jobs[0].entries[0]' is not the index of an entry (the file has 1)");
  EXPECT_EQ(error(R"([{"key":"bucket:a","entries":[]}])"),
            "s.json: field 'jobs[0].entries' is empty (expected the indices of the array's entries)");
  EXPECT_EQ(error(R"([{"key":"b","entries":[0]}])"),
            "s.json: field 'jobs[0].key' is 'b' (expected bucket:NAME for a job that is not the canary)");
  EXPECT_EQ(error(R"([{"key":"bucket:a","entries":[0]}])"), "");
}

TEST(SweepManifestJson, AMinimalManifestReads) {
  Result<SweepManifest> m = SweepManifestFromJson(
      kHead + R"("sweep":"sw-1","jobs":[{"key":"canary","canary":true,"gpus":4,"entries":[0]}],)"
              R"("entries":[{"index":0,"job":"canary","recipe":"r","arm":"tp4","conc":8}]})",
      "s.json");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m.value().sweep_id, "sw-1");
  ASSERT_EQ(m.value().plan.jobs.size(), 1u);
  EXPECT_TRUE(m.value().plan.jobs[0].canary);
  ASSERT_EQ(m.value().plan.entries.size(), 1u);
  EXPECT_EQ(m.value().plan.entries[0].conc, 8);
}

// The task builds InferenceX's environment from the matrix entry and the
// recipe router's version, so both come back from sweep.json.
TEST(SweepManifestJson, TheMatrixEntryAndRouterVersionRoundTrip) {
  Result<SweepManifest> m = SweepManifestFromJson(
      kHead + R"("sweep":"sw-1","jobs":[{"key":"canary","canary":true,"gpus":4,"entries":[0]}],)"
              R"("entries":[{"index":0,"job":"canary","recipe":"r","arm":"dep4","conc":8,)"
              R"("router_version":"0.1.14","entry":{"tp":4,"dp-attn":true,"exp-name":"x"}}]})",
      "s.json");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m.value().plan.entries[0].router_version, "0.1.14");
  EXPECT_EQ(m.value().plan.entries[0].entry_json, R"({"tp":4,"dp-attn":true,"exp-name":"x"})");
}

TEST(SweepManifestJson, StreamSettingsRoundTripAndPlaceTheTaskResults) {
  const std::string base = kHead + R"("sweep":"sw-2","sweep_dir":"/s","jobs":[],"entries":[])";
  Result<SweepManifest> old = SweepManifestFromJson(base + "}", "s.json");
  ASSERT_TRUE(old.ok()) << old.error().message;
  EXPECT_EQ(old.value().stream.agent_socket, "/run/inferencex/agent.sock");  // written before the agent
  EXPECT_EQ(TaskResultDir(old.value(), 3), "/s/results/3");

  Result<SweepManifest> m = SweepManifestFromJson(
      base + R"(,"stream":{"agent_socket":"/a.sock","collector_listen":"0.0.0.0:1","collector_url":"http://h:1",)"
             R"("token_file":"/s/t",)"
             R"("node_result_dir":"/local"}})",
      "s.json");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m.value().stream.collector_url, "http://h:1");
  EXPECT_EQ(m.value().stream.collector_listen, "0.0.0.0:1");
  EXPECT_EQ(m.value().stream.token_file, "/s/t");
  EXPECT_EQ(ResultDir(m.value(), 3), "/s/results/3");
  EXPECT_EQ(TaskResultDir(m.value(), 3), "/local/sw-2/3");
}

}  // namespace
}  // namespace ix
