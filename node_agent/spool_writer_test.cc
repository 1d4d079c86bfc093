// The spool's appending side: Append (all or none, segments rotated) and
// AddResult.
#include "node_agent/spool.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "core/base/sha256.h"
#include "node_agent/spool_test_util.h"
#include "tests/support/test.h"

// In ix::test, with the helpers of spool_test_util.h and test.h.
namespace ix::test {
namespace {

namespace fs = std::filesystem;

TEST(Spool, AppendRefusesBadRecordsWholeAndAFullSpool) {
  TempDir tmp("ix-spool");
  SpoolOptions options;
  options.max_event_bytes = 100;
  std::unique_ptr<Spool> spool = MustOpen(tmp.path() + "/s", options);
  ASSERT_NE(spool, nullptr);
  Status bad = spool->Append({"good", "two\nlines"});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("record 2 of 2"), std::string::npos) << bad.error().message;
  EXPECT_FALSE(spool->Append({"good", ""}));
  EXPECT_FALSE(spool->Append({std::string(kMaxSpoolRecordBytes + 1, 'x')}));
  EXPECT_EQ(spool->Stats().pending_records, 0u);  // nothing of those went in
  ASSERT_TRUE(spool->Append({std::string(90, 'a')}));
  Status full = spool->Append({std::string(20, 'a')});
  ASSERT_FALSE(full);
  EXPECT_NE(full.error().message.find("full"), std::string::npos) << full.error().message;
  EXPECT_EQ(spool->Stats().pending_records, 1u);
}

TEST(Spool, RotatesSegmentsAndDeletesThoseDelivered) {
  TempDir tmp("ix-spool");
  const std::string dir = tmp.path() + "/s";
  std::unique_ptr<Spool> spool = RotatingSpool(dir, 10);  // ~60 bytes each
  ASSERT_NE(spool, nullptr);
  const std::vector<std::string> files = SegmentFiles(dir);
  EXPECT_EQ(files.size(), 10u);
  EXPECT_EQ(files.front(), "events-0000000000000001.jsonl");
  EXPECT_EQ(spool->Stats().segments, 10u);
  EXPECT_EQ(spool->Stats().pending_records, 30u);

  Result<SpoolBatch> b = spool->ReadBatch(7, 1 << 20);  // across three segments
  ASSERT_TRUE(b);
  EXPECT_EQ(Texts(b.value()), Recs(0, 7));
  ASSERT_TRUE(spool->Acknowledge(b.value().end));
  EXPECT_EQ(SegmentFiles(dir).size(), 8u);  // the first two are done
  b = spool->ReadBatch(100, 1 << 20);
  ASSERT_TRUE(b);
  EXPECT_EQ(Texts(b.value()), Recs(7, 30));
  ASSERT_TRUE(spool->Acknowledge(b.value().end));
  EXPECT_EQ(SegmentFiles(dir), std::vector<std::string>{"events-0000000000000010.jsonl"});  // the writer's
  EXPECT_EQ(spool->Stats().pending_records, 0u);
  ASSERT_TRUE(spool->Append(Recs(30, 33)));  // rotates: the last one holds 60 bytes
  b = spool->ReadBatch(100, 1 << 20);
  ASSERT_TRUE(b);
  EXPECT_EQ(Texts(b.value()), Recs(30, 33));
  ASSERT_TRUE(spool->Acknowledge(b.value().end));
  EXPECT_EQ(SegmentFiles(dir), std::vector<std::string>{"events-0000000000000011.jsonl"});
}

TEST(SpoolResults, CopiesWithSha256AndSurvivesARestart) {
  TempDir tmp("ix-spool");
  const std::string dir = tmp.path() + "/s";
  const std::string src = tmp.path() + "/gpu_metrics.csv";
  std::string content;
  for (int i = 0; i < 50000; ++i) content += "row," + std::to_string(i) + "\n";  // several copy chunks
  std::ofstream(src) << content;
  uint64_t id = 0;
  {
    std::unique_ptr<Spool> spool = MustOpen(dir);
    ASSERT_NE(spool, nullptr);
    UniqueFd fd(::open(src.c_str(), O_RDONLY | O_CLOEXEC));
    ASSERT_EQ(::lseek(fd.get(), 100, SEEK_SET), 100);  // the sender's offset does not matter
    Result<SpoolResult> r = spool->AddResult("sw-1", 3, "gpu_metrics.csv", fd.get(), 64 << 20);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r.value().sha256, Sha256Hex(content));
    EXPECT_EQ(r.value().size, content.size());
    EXPECT_EQ(::lseek(fd.get(), 0, SEEK_CUR), 100);
    id = r.value().id;
    EXPECT_EQ(spool->Stats().result_bytes, content.size());
  }
  std::unique_ptr<Spool> spool = MustOpen(dir);
  ASSERT_NE(spool, nullptr);
  const std::vector<SpoolResult> pending = spool->PendingResults();
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_EQ(pending[0].id, id);
  EXPECT_EQ(pending[0].sweep, "sw-1");
  EXPECT_EQ(pending[0].entry, 3);
  EXPECT_EQ(pending[0].name, "gpu_metrics.csv");
  EXPECT_EQ(pending[0].sha256, Sha256Hex(content));
  Result<UniqueFd> in = spool->OpenResult(id);
  ASSERT_TRUE(in) << in.error().message;
  std::string copy(content.size() + 10, '\0');
  EXPECT_EQ(::pread(in.value().get(), copy.data(), copy.size(), 0), static_cast<ssize_t>(content.size()));
  copy.resize(content.size());
  EXPECT_EQ(copy, content);
  ASSERT_TRUE(spool->ResultDone(id));
  EXPECT_TRUE(spool->PendingResults().empty());
  EXPECT_FALSE(spool->ResultDone(id));
  EXPECT_TRUE(fs::is_empty(dir + "/results"));
  EXPECT_EQ(spool->Stats().result_bytes, 0u);
}

TEST(SpoolResults, RefusesWhatCouldBlockIsTooBigOrIsBadlyNamed) {
  TempDir tmp("ix-spool");
  std::unique_ptr<Spool> spool = MustOpen(tmp.path() + "/s");
  ASSERT_NE(spool, nullptr);
  int pipe_fds[2];
  ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
  UniqueFd r(pipe_fds[0]), w(pipe_fds[1]);
  Result<SpoolResult> piped = spool->AddResult("sw", 0, "x.csv", r.get(), 1000);
  ASSERT_FALSE(piped);
  EXPECT_NE(piped.error().message.find("not a regular file"), std::string::npos) << piped.error().message;

  const std::string src = tmp.path() + "/big";
  std::ofstream(src) << std::string(2000, 'z');
  UniqueFd fd(::open(src.c_str(), O_RDONLY | O_CLOEXEC));
  Result<SpoolResult> big = spool->AddResult("sw", 0, "big", fd.get(), 1000);
  ASSERT_FALSE(big);
  EXPECT_NE(big.error().message.find("at most 1000"), std::string::npos) << big.error().message;
  for (const std::string& name : std::vector<std::string>{"..", "a/b/c", "../a", "", std::string(256, 'n')}) {
    EXPECT_FALSE(spool->AddResult("sw", 0, name, fd.get(), 1 << 20)) << name;
  }
  EXPECT_FALSE(spool->AddResult("..", 0, "ok", fd.get(), 1 << 20));
  EXPECT_FALSE(spool->AddResult("sw", -1, "ok", fd.get(), 1 << 20));
  EXPECT_TRUE(spool->PendingResults().empty());
  EXPECT_TRUE(fs::is_empty(tmp.path() + "/s/results"));  // no copy left behind
}

}  // namespace
}  // namespace ix::test
