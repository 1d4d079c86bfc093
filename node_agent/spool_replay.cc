// Spool: the delivering side (spool.h): the queue replayed from the
// cursor, acknowledged durably, and the pending result files handed out.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <iterator>
#include <string>

#include "node_agent/spool.h"
#include "node_agent/spool_format.h"

namespace ix {

using spool_format::Errno;
using spool_format::SegmentName;
using spool_format::kResults;
using spool_format::ResultFile;

Result<SpoolBatch> Spool::ReadBatch(size_t max_records, size_t max_bytes) {
  std::map<uint64_t, Segment> segments;
  SpoolBatch batch;
  {
    std::lock_guard<std::mutex> lock(mu_);
    batch.end = cursor_;
    segments.insert(segments_.lower_bound(cursor_.segment), segments_.end());
  }
  SpoolPosition& pos = batch.end;
  UniqueFd fd;
  uint64_t fd_segment = 0;
  std::string buf;
  while (batch.records.size() < max_records) {
    auto it = segments.find(pos.segment);
    if (it == segments.end() || pos.offset >= it->second.bytes) {
      auto next = segments.upper_bound(pos.segment);
      if (next == segments.end()) break;
      pos = SpoolPosition{next->first, 0, 0};
      continue;
    }
    const std::string where = dir_ + "/" + SegmentName(pos.segment);
    if (!fd.valid() || fd_segment != pos.segment) {
      fd.reset(::openat(dir_fd_.get(), SegmentName(pos.segment).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
      if (!fd.valid()) return Error{"spool " + where + ": " + Errno(errno)};
      fd_segment = pos.segment;
    }
    // Enough for the byte budget, and always for one whole record.
    const size_t budget = max_bytes > batch.bytes ? max_bytes - batch.bytes : 0;
    const size_t want = static_cast<size_t>(
        std::min<uint64_t>(it->second.bytes - pos.offset, std::max(budget, kMaxSpoolRecordBytes + 1)));
    buf.resize(want);
    const ssize_t got = spool_format::PreadFull(fd.get(), buf.data(), want, pos.offset);
    if (got != static_cast<ssize_t>(want)) {
      return Error{"spool " + where + ": " + (got < 0 ? Errno(errno) : "shorter than what was written")};
    }
    size_t taken = 0;
    if (spool_format::TakeLines(buf, max_records, max_bytes, batch, taken)) break;
    if (taken == 0) {
      // No line end within the longest record: the file is damaged. Hand
      // the bytes on as a record (the collector refuses it, delivery skips
      // it) rather than stall the queue.
      pos.offset += want;
      batch.records.push_back(SpoolRecord{buf, pos});
      batch.bytes += want + 1;
    }
  }
  return batch;
}

Status Spool::WriteCursor(const SpoolPosition& position) {
  return spool_format::WriteDurableAt(dir_fd_.get(), dir_, spool_format::kCursor, spool_format::CursorText(position));
}

Status Spool::Acknowledge(const SpoolPosition& position) {
  std::lock_guard<std::mutex> ack(ack_mu_);
  SpoolPosition to = position;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!(cursor_ < to)) return Ok{};
    auto it = segments_.find(to.segment);
    if (it == segments_.end() || to.offset > it->second.bytes) {
      return Error{"spool " + dir_ + ": position " + std::to_string(to.segment) + ":" + std::to_string(to.offset) +
                   " is not in the queue"};
    }
    // At the end of a segment the writer has left: on to the next, so the
    // finished one can go.
    if (to.offset == it->second.bytes && std::next(it) != segments_.end()) {
      to = SpoolPosition{std::next(it)->first, 0, 0};
    }
  }
  if (Status s = WriteCursor(to); !s) return s;
  std::vector<uint64_t> gone;
  {
    std::lock_guard<std::mutex> lock(mu_);
    cursor_ = to;
    while (!segments_.empty() && segments_.begin()->first < to.segment) {
      gone.push_back(segments_.begin()->first);
      segments_.erase(segments_.begin());
    }
  }
  for (uint64_t n : gone) ::unlinkat(dir_fd_.get(), SegmentName(n).c_str(), 0);
  return Ok{};
}

std::vector<SpoolResult> Spool::PendingResults() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<SpoolResult> out;
  for (const auto& [id, r] : results_) out.push_back(r);
  return out;
}

Result<UniqueFd> Spool::OpenResult(uint64_t id) const {
  const std::string name = ResultFile(id, ".data");
  UniqueFd fd(::openat(results_fd_.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) return Error{"spool " + dir_ + "/" + kResults + "/" + name + ": " + Errno(errno)};
  return fd;
}

Status Spool::ResultDone(uint64_t id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = results_.find(id);
    if (it == results_.end()) return Error{"spool " + dir_ + ": no pending result " + std::to_string(id)};
    result_bytes_ -= it->second.size;
    results_.erase(it);
  }
  // The description first: without it the data is no longer pending.
  ::unlinkat(results_fd_.get(), ResultFile(id, ".meta").c_str(), 0);
  ::unlinkat(results_fd_.get(), ResultFile(id, ".data").c_str(), 0);
  return Ok{};
}

}  // namespace ix
