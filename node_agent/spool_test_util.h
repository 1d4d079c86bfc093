// What the spool's tests share: records to append, a spool opened in a
// test's directory, the segment files and their bytes. One copy for
// spool_test.cc (opening and recovery), spool_writer_test.cc and
// spool_replay_test.cc.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "node_agent/spool.h"
#include "tests/support/test.h"

namespace ix::test {

// Record `i`: a stamped event's shape, 20 bytes for i < 10.
inline std::string Rec(int i) { return R"({"id":"1.0:)" + std::to_string(i) + R"(","n":)" + std::to_string(i) + "}"; }

// Records [from, to).
inline std::vector<std::string> Recs(int from, int to) {
  std::vector<std::string> out;
  for (int i = from; i < to; ++i) out.push_back(Rec(i));
  return out;
}

inline std::vector<std::string> Texts(const SpoolBatch& b) {
  std::vector<std::string> out;
  for (const SpoolRecord& r : b.records) out.push_back(r.text);
  return out;
}

inline SpoolOptions SegmentBytes(uint64_t bytes) {
  SpoolOptions options;
  options.segment_bytes = bytes;
  return options;
}

inline std::unique_ptr<Spool> MustOpen(const std::string& dir, const SpoolOptions& options = {}) {
  Result<std::unique_ptr<Spool>> s = Spool::Open(dir, options);
  EXPECT_TRUE(s) << s.error().message;
  return s ? std::move(s).value() : nullptr;
}

// A spool at `dir` with SegmentBytes(100) and records [0, 3 * batches)
// appended three at a time: about 60 bytes a batch, so each batch starts a
// segment. nullptr (the test failed) when it cannot open or append.
inline std::unique_ptr<Spool> RotatingSpool(const std::string& dir, int batches) {
  std::unique_ptr<Spool> spool = MustOpen(dir, SegmentBytes(100));
  for (int i = 0; spool && i < batches; ++i) {
    Status appended = spool->Append(Recs(i * 3, i * 3 + 3));
    EXPECT_TRUE(appended) << appended.error().message;
    if (!appended) spool.reset();
  }
  return spool;
}

// The segment files in `dir`, sorted.
inline std::vector<std::string> SegmentFiles(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string n = e.path().filename();
    if (n.rfind("events-", 0) == 0) out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

inline std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace ix::test
