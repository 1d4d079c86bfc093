#include "submitter/collector/collector_store.h"

#include <gtest/gtest.h>

#include "core/base/sha256.h"
#include "submitter/sweep/sweep_store.h"
#include "tests/support/test.h"

namespace ix {
namespace {

ValidEvent Event(const std::string& id, double time, std::optional<std::string> sweep = std::nullopt) {
  ValidEvent e;
  e.id = id;
  e.event = "started";
  e.step = id.substr(0, id.find(':'));
  e.time = time;
  e.sweep = std::move(sweep);
  e.body = "{\"id\":\"" + id + "\"}";
  return e;
}

std::vector<std::string> Ids(const Result<std::vector<StoredEvent>>& events) {
  std::vector<std::string> ids;
  EXPECT_TRUE(events);
  if (events) {
    for (const StoredEvent& e : events.value()) ids.push_back(e.id);
  }
  return ids;
}

class CollectorStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<CollectorStore> s = CollectorStore::Open(path_);
    ASSERT_TRUE(s) << s.error().message;
    store_.emplace(std::move(s).value());
  }
  CollectorStore& store() { return *store_; }

  test::TempDir dir_{"ix-collector-store"};
  std::string path_ = dir_.path() + "/state/ix.db";
  std::optional<CollectorStore> store_;
};

TEST_F(CollectorStoreTest, StoresEventsWithTheirFields) {
  ValidEvent e = Event("7.0:1", 10.5, "sw-1");
  e.entry = 4;
  e.node = "gpu-01";
  Result<IngestCounts> c = store().IngestEvents({e}, 99.25);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c.value().stored, 1);
  Result<std::vector<StoredEvent>> all = store().ListEvents(std::nullopt);
  ASSERT_TRUE(all) << all.error().message;
  ASSERT_EQ(all.value().size(), 1u);
  const StoredEvent& s = all.value()[0];
  EXPECT_EQ(s.id, "7.0:1");
  EXPECT_EQ(s.sweep, "sw-1");
  EXPECT_EQ(s.entry, 4);
  EXPECT_EQ(s.step, "7.0");
  EXPECT_EQ(s.event, "started");
  EXPECT_EQ(s.node, "gpu-01");
  EXPECT_DOUBLE_EQ(s.time, 10.5);
  EXPECT_DOUBLE_EQ(s.received, 99.25);
  EXPECT_EQ(s.body, e.body);
}

TEST_F(CollectorStoreTest, IngestIsIdempotentById) {
  Result<IngestCounts> first = store().IngestEvents({Event("1.0:1", 1), Event("1.0:2", 2)}, 5);
  ASSERT_TRUE(first);
  EXPECT_EQ(first.value().stored, 2);
  EXPECT_EQ(first.value().new_events, (std::vector<size_t>{0, 1}));
  // Again, plus a new one and an in-batch duplicate.
  ValidEvent changed = Event("1.0:2", 2);
  changed.body = "{\"different\":true}";
  Result<IngestCounts> again =
      store().IngestEvents({Event("1.0:1", 1), changed, Event("1.0:3", 3), Event("1.0:3", 3)}, 6);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again.value().stored, 1);
  EXPECT_EQ(again.value().duplicates, 3);
  EXPECT_EQ(again.value().new_events, (std::vector<size_t>{2}));
  Result<std::vector<StoredEvent>> all = store().ListEvents(std::nullopt);
  ASSERT_EQ(all.value().size(), 3u);
  EXPECT_EQ(all.value()[1].body, "{\"id\":\"1.0:2\"}") << "the first copy stays";
  EXPECT_DOUBLE_EQ(all.value()[1].received, 5);
}

TEST_F(CollectorStoreTest, ABatchIsAllOrNothing) {
  // A trigger stands in for any SQLite failure in the middle of a batch.
  ASSERT_TRUE(store().db().Exec("CREATE TRIGGER fail_third BEFORE INSERT ON events WHEN NEW.id = '2.0:3' "
                                "BEGIN SELECT RAISE(ABORT, 'refused by the test'); END",
                                "make a trigger"));
  Result<IngestCounts> c = store().IngestEvents({Event("2.0:1", 1), Event("2.0:2", 2), Event("2.0:3", 3)}, 1);
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("cannot store event 2.0:3"), std::string::npos) << c.error().message;
  EXPECT_NE(c.error().message.find(path_), std::string::npos);
  EXPECT_TRUE(store().ListEvents(std::nullopt).value().empty());
  // The store is usable afterwards (the transaction was rolled back).
  EXPECT_TRUE(store().IngestEvents({Event("2.0:1", 1)}, 1));
  EXPECT_EQ(store().ListEvents(std::nullopt).value().size(), 1u);
}

TEST_F(CollectorStoreTest, ListsByTimeThenIdAndBySweep) {
  ASSERT_TRUE(store().IngestEvents({Event("3.0:2", 5, "sw-b"), Event("3.0:1", 5, "sw-a"), Event("3.0:9", 1),
                                    Event("3.0:3", 2, "sw-a")},
                                   1));
  EXPECT_EQ(Ids(store().ListEvents(std::nullopt)), (std::vector<std::string>{"3.0:9", "3.0:3", "3.0:1", "3.0:2"}));
  EXPECT_EQ(Ids(store().ListEvents("sw-a")), (std::vector<std::string>{"3.0:3", "3.0:1"}));
  EXPECT_TRUE(store().ListEvents("sw-none").value().empty());
}

TEST_F(CollectorStoreTest, ResultFilesKeepTheirBytes) {
  using namespace std::string_literals;
  const std::string content = "binary\0\xff\xfe data\n"s;
  ASSERT_EQ(content.size(), 15u);
  const ResultTarget where{"sw-1", 2, "out.bin"};
  Result<PutOutcome> put = store().PutResult(where, Sha256Hex(content), content, 3);
  ASSERT_TRUE(put) << put.error().message;
  EXPECT_EQ(put.value(), PutOutcome::kCreated);
  Result<std::optional<std::string>> read = store().ReadResult(where);
  ASSERT_TRUE(read && read.value());
  EXPECT_EQ(*read.value(), content);
  Result<std::vector<StoredResultInfo>> list = store().ListResults(std::nullopt);
  ASSERT_EQ(list.value().size(), 1u);
  EXPECT_EQ(list.value()[0].size, 15);
  EXPECT_EQ(list.value()[0].sha256, Sha256Hex(content));
  EXPECT_FALSE(store().ReadResult(ResultTarget{"sw-1", 3, "out.bin"}).value());
}

TEST_F(CollectorStoreTest, AResultAgainIsUnchangedAndNewContentReplaces) {
  const ResultTarget where{"sw-1", 0, "result.json"};
  ASSERT_EQ(store().PutResult(where, Sha256Hex("a"), "a", 1).value(), PutOutcome::kCreated);
  EXPECT_EQ(store().PutResult(where, Sha256Hex("a"), "a", 2).value(), PutOutcome::kUnchanged);
  EXPECT_DOUBLE_EQ(store().ListResults("sw-1").value()[0].received, 1) << "an unchanged repeat writes nothing";
  EXPECT_EQ(store().PutResult(where, Sha256Hex("bb"), "bb", 3).value(), PutOutcome::kReplaced);
  EXPECT_EQ(*store().ReadResult(where).value(), "bb");
  EXPECT_EQ(store().ListResults(std::nullopt).value().size(), 1u);
  EXPECT_EQ(store().PutResult(where, Sha256Hex(""), "", 4).value(), PutOutcome::kReplaced);
  EXPECT_EQ(*store().ReadResult(where).value(), "");
}

TEST_F(CollectorStoreTest, SharesTheSweepDatabase) {
  // The sweep opens the same file afterwards (its schema was made by the
  // collector's open), and the collector's tables survive a reopen.
  ASSERT_TRUE(store().IngestEvents({Event("4.0:1", 1)}, 1));
  Result<SweepStore> sweep = SweepStore::Open(path_);
  ASSERT_TRUE(sweep) << sweep.error().message;
  EXPECT_TRUE(sweep.value().ListSweeps());
  store_.reset();
  Result<CollectorStore> again = CollectorStore::Open(path_);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again.value().ListEvents(std::nullopt).value().size(), 1u);
}

TEST(CollectorStoreOpen, RefusesAFileThatIsNotADatabase) {
  test::TempDir dir("ix-collector-store");
  const std::string path = dir.path() + "/ix.db";
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_TRUE(f);
  std::fputs("not sqlite at all, but long enough to look like a header of a file........", f);
  std::fclose(f);
  Result<CollectorStore> s = CollectorStore::Open(path);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find(path), std::string::npos) << s.error().message;
}

}  // namespace
}  // namespace ix
