// The spool's delivering side: ReadBatch from the cursor, Acknowledge,
// and one appender with one deliverer at once.
#include "node_agent/spool.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "node_agent/spool_test_util.h"
#include "tests/support/test.h"

// In ix::test, with the helpers of spool_test_util.h and test.h.
namespace ix::test {
namespace {


TEST(Spool, ReadsInOrderAndForgetsOnlyWhatIsAcknowledged) {
  TempDir tmp("ix-spool");
  std::unique_ptr<Spool> spool = MustOpen(tmp.path() + "/s");
  ASSERT_NE(spool, nullptr);
  Result<SpoolBatch> empty = spool->ReadBatch(10, 1 << 20);
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty.value().records.empty());

  ASSERT_TRUE(spool->Append(Recs(1, 6)));
  EXPECT_EQ(spool->Stats().pending_records, 5u);
  Result<SpoolBatch> b = spool->ReadBatch(3, 1 << 20);
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ(Texts(b.value()), Recs(1, 4));
  EXPECT_EQ(b.value().end, b.value().records.back().end);
  // Not acknowledged: the same again.
  Result<SpoolBatch> again = spool->ReadBatch(3, 1 << 20);
  ASSERT_TRUE(again);
  EXPECT_EQ(Texts(again.value()), Recs(1, 4));
  // Acknowledge the first two only.
  ASSERT_TRUE(spool->Acknowledge(b.value().records[1].end));
  EXPECT_EQ(spool->Stats().pending_records, 3u);
  Result<SpoolBatch> rest = spool->ReadBatch(100, 1 << 20);
  ASSERT_TRUE(rest);
  EXPECT_EQ(Texts(rest.value()), Recs(3, 6));
  // An older position changes nothing.
  ASSERT_TRUE(spool->Acknowledge(b.value().records[0].end));
  EXPECT_EQ(spool->Stats().pending_records, 3u);
  ASSERT_TRUE(spool->Acknowledge(rest.value().end));
  EXPECT_EQ(spool->Stats().pending_records, 0u);
  Result<SpoolBatch> none = spool->ReadBatch(100, 1 << 20);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none.value().records.empty());
  // A position it never gave is refused.
  EXPECT_FALSE(spool->Acknowledge(SpoolPosition{99, 5, 0}));
}

TEST(Spool, ByteLimitKeepsWholeRecordsAndAlwaysGivesOne) {
  TempDir tmp("ix-spool");
  std::unique_ptr<Spool> spool = MustOpen(tmp.path() + "/s");
  ASSERT_NE(spool, nullptr);
  const std::string big(5000, 'b');
  ASSERT_TRUE(spool->Append({big, "x1", "x2"}));
  Result<SpoolBatch> b = spool->ReadBatch(10, 100);
  ASSERT_TRUE(b);
  EXPECT_EQ(Texts(b.value()), std::vector<std::string>{big});  // longer than the limit, but first
  ASSERT_TRUE(spool->Acknowledge(b.value().end));
  b = spool->ReadBatch(10, 5);
  ASSERT_TRUE(b);
  EXPECT_EQ(Texts(b.value()), std::vector<std::string>{"x1"});  // x1 and x2 count 3 bytes each
  EXPECT_EQ(b.value().bytes, 3u);
  b = spool->ReadBatch(10, 6);
  ASSERT_TRUE(b);
  EXPECT_EQ(Texts(b.value()), (std::vector<std::string>{"x1", "x2"}));
  EXPECT_EQ(b.value().bytes, 6u);
}

TEST(Spool, OneAppenderAndOneDelivererAtOnce) {
  TempDir tmp("ix-spool");
  const SpoolOptions options = SegmentBytes(2000);
  std::unique_ptr<Spool> spool = MustOpen(tmp.path() + "/s", options);
  ASSERT_NE(spool, nullptr);
  constexpr int kTotal = 3000;
  std::thread appender([&] {
    for (int i = 0; i < kTotal; i += 30) ASSERT_TRUE(spool->Append(Recs(i, i + 30)));
  });
  std::vector<std::string> got;
  const bool done = WaitUntil(
      [&] {
        Result<SpoolBatch> b = spool->ReadBatch(97, 1 << 20);
        if (!b || !spool->Acknowledge(b.value().end)) return true;
        for (const SpoolRecord& r : b.value().records) got.push_back(r.text);
        return got.size() >= static_cast<size_t>(kTotal);
      },
      std::chrono::seconds(60));
  appender.join();
  EXPECT_TRUE(done);
  EXPECT_EQ(got, Recs(0, kTotal));  // each once, in order
  EXPECT_EQ(spool->Stats().pending_records, 0u);
}

}  // namespace
}  // namespace ix::test
