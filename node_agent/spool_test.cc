// Spool::Open: the directory it makes or refuses, and what it recovers
// after a crash or a restart.
#include "node_agent/spool.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "node_agent/spool_test_util.h"
#include "tests/support/test.h"

// In ix::test, with the helpers of spool_test_util.h and test.h.
namespace ix::test {
namespace {

namespace fs = std::filesystem;

TEST(Spool, CreatesAPrivateDirectoryAndRefusesOthers) {
  TempDir tmp("ix-spool");
  const std::string dir = tmp.path() + "/a/spool";
  ASSERT_NE(MustOpen(dir), nullptr);
  struct stat st{};
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  ASSERT_EQ(::stat((dir + "/results").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);

  ASSERT_EQ(::chmod(dir.c_str(), 0750), 0);
  Result<std::unique_ptr<Spool>> open = Spool::Open(dir);
  ASSERT_FALSE(open);
  EXPECT_NE(open.error().message.find("mode 0750"), std::string::npos) << open.error().message;
  EXPECT_NE(open.error().message.find("chmod 0700"), std::string::npos) << open.error().message;
  ASSERT_EQ(::chmod(dir.c_str(), 0700), 0);
  ASSERT_EQ(::chmod((dir + "/results").c_str(), 0705), 0);
  EXPECT_FALSE(Spool::Open(dir));
  ASSERT_EQ(::chmod((dir + "/results").c_str(), 0700), 0);

  const std::string link = tmp.path() + "/link";
  ASSERT_EQ(::symlink(dir.c_str(), link.c_str()), 0);
  EXPECT_FALSE(Spool::Open(link));
  EXPECT_FALSE(Spool::Open("relative/spool"));
}

TEST(Spool, ANewSpoolOnTheDirectoryResumesAtTheCursor) {
  TempDir tmp("ix-spool");
  const std::string dir = tmp.path() + "/s";
  {
    std::unique_ptr<Spool> spool = RotatingSpool(dir, 5);
    ASSERT_NE(spool, nullptr);
    Result<SpoolBatch> b = spool->ReadBatch(4, 1 << 20);
    ASSERT_TRUE(b);
    ASSERT_TRUE(spool->Acknowledge(b.value().end));
    EXPECT_EQ(ReadAll(dir + "/cursor"), "2 21\n");  // one record (20 bytes and its newline) into segment 2
  }
  std::unique_ptr<Spool> again = MustOpen(dir, SegmentBytes(100));
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->Stats().pending_records, 11u);
  Result<SpoolBatch> b = again->ReadBatch(100, 1 << 20);
  ASSERT_TRUE(b);
  EXPECT_EQ(Texts(b.value()), Recs(4, 15));
  ASSERT_TRUE(again->Append(Recs(15, 17)));
  b = again->ReadBatch(100, 1 << 20);
  ASSERT_TRUE(b);
  EXPECT_EQ(Texts(b.value()), Recs(4, 17));
  EXPECT_TRUE(again->notes().empty());
}

TEST(Spool, ATornLastLineIsCutOffOnOpen) {
  TempDir tmp("ix-spool");
  const std::string dir = tmp.path() + "/s";
  {
    std::unique_ptr<Spool> spool = MustOpen(dir);
    ASSERT_NE(spool, nullptr);
    ASSERT_TRUE(spool->Append(Recs(1, 3)));
  }
  const std::string seg = dir + "/events-0000000000000001.jsonl";
  const std::string torn = R"({"id":"1.0:3","cut)";
  std::ofstream(seg, std::ios::app) << torn;  // a crash mid-write
  std::unique_ptr<Spool> spool = MustOpen(dir);
  ASSERT_NE(spool, nullptr);
  ASSERT_EQ(spool->notes().size(), 1u);
  EXPECT_NE(spool->notes()[0].find("torn last line of " + std::to_string(torn.size()) + " bytes"), std::string::npos)
      << spool->notes()[0];
  EXPECT_EQ(ReadAll(seg), Rec(1) + "\n" + Rec(2) + "\n");
  EXPECT_EQ(spool->Stats().pending_records, 2u);
  ASSERT_TRUE(spool->Append(Recs(3, 4)));
  Result<SpoolBatch> b = spool->ReadBatch(100, 1 << 20);
  ASSERT_TRUE(b);
  EXPECT_EQ(Texts(b.value()), Recs(1, 4));
}

TEST(Spool, ACursorThatIsNotOneIsAnError) {
  TempDir tmp("ix-spool");
  const std::string dir = tmp.path() + "/s";
  ASSERT_NE(MustOpen(dir), nullptr);
  std::ofstream(dir + "/cursor") << "garbage";
  Result<std::unique_ptr<Spool>> open = Spool::Open(dir);
  ASSERT_FALSE(open);
  EXPECT_NE(open.error().message.find("expected 'SEGMENT OFFSET'"), std::string::npos) << open.error().message;
}

TEST(SpoolResults, AHalfAddedResultIsRemovedOnOpen) {
  TempDir tmp("ix-spool");
  const std::string dir = tmp.path() + "/s";
  ASSERT_NE(MustOpen(dir), nullptr);
  std::ofstream(dir + "/results/7.data") << "no description";
  std::ofstream(dir + "/results/.tmp-8") << "half";
  std::ofstream(dir + "/results/9.meta") << "{}";
  std::unique_ptr<Spool> spool = MustOpen(dir);
  ASSERT_NE(spool, nullptr);
  EXPECT_TRUE(spool->PendingResults().empty());
  EXPECT_EQ(spool->notes().size(), 3u);
  EXPECT_TRUE(fs::is_empty(dir + "/results"));
  // New ids do not reuse those seen.
  const std::string src = tmp.path() + "/f";
  std::ofstream(src) << "x";
  UniqueFd fd(::open(src.c_str(), O_RDONLY | O_CLOEXEC));
  Result<SpoolResult> r = spool->AddResult("sw", 1, "f", fd.get(), 10);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r.value().id, 10u);
}

}  // namespace
}  // namespace ix::test
