// SweepManifestFromJson on sweep.json text that is JSON but not what
// WriteSweepFiles writes (cases found by fuzz/sweep_json_fuzz).
#include "submitter/sweep_files.h"

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

}  // namespace
}  // namespace ix
