// The spool's on-disk format: the names it gives its files, the cursor's
// text, a result's description, and how a read buffer becomes records.
#include "node_agent/spool_format.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ix {
namespace {

using namespace spool_format;  // NOLINT: the format's own test

TEST(SpoolFormat, SegmentNamesRoundTripAndNothingElseParses) {
  EXPECT_EQ(SegmentName(1), "events-0000000000000001.jsonl");
  uint64_t n = 0;
  ASSERT_TRUE(ParseSegmentName(SegmentName(12345), n));
  EXPECT_EQ(n, 12345u);
  for (const char* bad : {"events-1.jsonl", "events-0000000000000001.json", "cursor", "xvents-0000000000000001.jsonl",
                          "events-000000000000000x.jsonl"}) {
    EXPECT_FALSE(ParseSegmentName(bad, n)) << bad;
  }
}

TEST(SpoolFormat, CursorTextRoundTrips) {
  EXPECT_EQ(CursorText(SpoolPosition{2, 21, 7}), "2 21\n");
  SpoolPosition at;
  ASSERT_TRUE(ParseCursorText("2 21\n", at));
  EXPECT_EQ(at, (SpoolPosition{2, 21, 0}));
  for (const char* bad : {"garbage", "2", "2 21 3", "-1 0", ""}) EXPECT_FALSE(ParseCursorText(bad, at)) << bad;
}

TEST(SpoolFormat, ResultMetaRoundTripsAndRefusesAnotherId) {
  const SpoolResult r{7, "sw-1", 3, "gpu_metrics.csv", std::string(64, 'a'), 1234};
  const std::string meta = ResultMeta(r);
  EXPECT_EQ(meta, R"({"id":7,"sweep":"sw-1","entry":3,"name":"gpu_metrics.csv","sha256":")" + std::string(64, 'a') +
                      R"(","size":1234})" + "\n");
  Result<SpoolResult> back = ParseResultMeta(meta, 7);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back.value().sweep, "sw-1");
  EXPECT_EQ(back.value().entry, 3);
  EXPECT_EQ(back.value().size, 1234u);
  EXPECT_FALSE(ParseResultMeta(meta, 8));
  EXPECT_FALSE(ParseResultMeta("{}", 7));
  EXPECT_EQ(ResultFile(7, ".data"), "7.data");
}

TEST(SpoolFormat, TakeLinesStopsAtTheLimitsAndSkipsEmptyLines) {
  SpoolBatch batch;
  size_t taken = 0;
  EXPECT_FALSE(TakeLines("a\n\nbb\ncc", 10, 100, batch, taken));
  ASSERT_EQ(batch.records.size(), 2u);
  EXPECT_EQ(batch.records[1].text, "bb");
  EXPECT_EQ(taken, 6u);  // the unfinished "cc" stays
  EXPECT_EQ(batch.end.line, 3u);
  SpoolBatch one;
  taken = 0;
  EXPECT_TRUE(TakeLines("a\nb\n", 1, 100, one, taken));
  EXPECT_EQ(one.records.size(), 1u);
}

}  // namespace
}  // namespace ix
