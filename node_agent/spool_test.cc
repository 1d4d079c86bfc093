#include "node_agent/spool.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/base/sha256.h"
#include "tests/support/test.h"

namespace ix {
namespace {

using ::ix::test::TempDir;
namespace fs = std::filesystem;

std::string Rec(int i) { return R"({"id":"1.0:)" + std::to_string(i) + R"(","n":)" + std::to_string(i) + "}"; }

std::vector<std::string> Recs(int from, int to) {
  std::vector<std::string> out;
  for (int i = from; i < to; ++i) out.push_back(Rec(i));
  return out;
}

std::vector<std::string> Texts(const SpoolBatch& b) {
  std::vector<std::string> out;
  for (const SpoolRecord& r : b.records) out.push_back(r.text);
  return out;
}

std::unique_ptr<Spool> MustOpen(const std::string& dir, const SpoolOptions& options = {}) {
  Result<std::unique_ptr<Spool>> s = Spool::Open(dir, options);
  EXPECT_TRUE(s) << s.error().message;
  return s ? std::move(s).value() : nullptr;
}

std::vector<std::string> SegmentFiles(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string n = e.path().filename();
    if (n.rfind("events-", 0) == 0) out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

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
  SpoolOptions options;
  options.segment_bytes = 100;
  std::unique_ptr<Spool> spool = MustOpen(dir, options);
  ASSERT_NE(spool, nullptr);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(spool->Append(Recs(i * 3, i * 3 + 3)));  // ~60 bytes each
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

TEST(Spool, ANewSpoolOnTheDirectoryResumesAtTheCursor) {
  TempDir tmp("ix-spool");
  const std::string dir = tmp.path() + "/s";
  SpoolOptions options;
  options.segment_bytes = 100;
  {
    std::unique_ptr<Spool> spool = MustOpen(dir, options);
    ASSERT_NE(spool, nullptr);
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(spool->Append(Recs(i * 3, i * 3 + 3)));
    Result<SpoolBatch> b = spool->ReadBatch(4, 1 << 20);
    ASSERT_TRUE(b);
    ASSERT_TRUE(spool->Acknowledge(b.value().end));
    EXPECT_EQ(ReadAll(dir + "/cursor"), "2 21\n");  // one record (20 bytes and its newline) into segment 2
  }
  std::unique_ptr<Spool> again = MustOpen(dir, options);
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

TEST(Spool, OneAppenderAndOneDelivererAtOnce) {
  TempDir tmp("ix-spool");
  SpoolOptions options;
  options.segment_bytes = 2000;
  std::unique_ptr<Spool> spool = MustOpen(tmp.path() + "/s", options);
  ASSERT_NE(spool, nullptr);
  constexpr int kTotal = 3000;
  std::thread appender([&] {
    for (int i = 0; i < kTotal; i += 30) ASSERT_TRUE(spool->Append(Recs(i, i + 30)));
  });
  std::vector<std::string> got;
  const bool done = test::WaitUntil(
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

// --- result files ---

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
}  // namespace ix
