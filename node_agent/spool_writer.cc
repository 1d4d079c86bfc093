// Spool: the appending side (spool.h): events appended to the segments,
// result files copied into results/.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <utility>

#include "core/base/sha256.h"
#include "node_agent/event_socket.h"
#include "node_agent/spool.h"
#include "node_agent/spool_format.h"

namespace ix {

using spool_format::Errno;
using spool_format::SegmentName;
using spool_format::kResults;
using spool_format::kTmpPrefix;
using spool_format::ResultFile;
using spool_format::WriteFull;

Status Spool::StartSegment(uint64_t number) {
  const std::string name = SegmentName(number);
  UniqueFd fd(::openat(dir_fd_.get(), name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd.valid()) return Error{"spool " + dir_ + "/" + name + ": cannot create: " + Errno(errno)};
  if (::fsync(dir_fd_.get()) != 0) return Error{"spool " + dir_ + ": fsync: " + Errno(errno)};
  write_fd_ = std::move(fd);
  write_segment_ = number;
  write_bytes_ = 0;
  std::lock_guard<std::mutex> lock(mu_);
  segments_[number] = Segment{};
  if (cursor_.segment < number && segments_.begin()->first == number) cursor_ = SpoolPosition{number, 0, 0};
  return Ok{};
}

Status Spool::Append(const std::vector<std::string>& records) {
  if (records.empty()) return Ok{};
  uint64_t total = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    const std::string& r = records[i];
    if (r.empty() || r.size() > kMaxSpoolRecordBytes || r.find('\n') != std::string::npos) {
      return Error{"spool: record " + std::to_string(i + 1) + " of " + std::to_string(records.size()) +
                   ": must be one line of 1 to " + std::to_string(kMaxSpoolRecordBytes) + " bytes"};
    }
    total += r.size() + 1;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    uint64_t held = 0;
    for (const auto& [n, s] : segments_) held += s.bytes;
    if (held + total > options_.max_event_bytes) {
      return Error{"spool " + dir_ + ": full (" + std::to_string(held) + " bytes of events; at most " +
                   std::to_string(options_.max_event_bytes) + ")"};
    }
  }
  std::string pending;
  pending.reserve(static_cast<size_t>(total));
  for (const std::string& r : records) {
    pending += r;
    pending += '\n';
  }
  // The whole batch goes into one segment, so it is all or none.
  if (write_bytes_ > 0 && write_bytes_ + pending.size() > options_.segment_bytes) {
    if (Status s = StartSegment(write_segment_ + 1); !s) return s;
  }
  return Flush(pending, records.size());
}

// Writes `pending` at the end of the write segment and fdatasyncs it; on
// failure cuts the segment back, so no partial batch is ever read.
Status Spool::Flush(const std::string& pending, uint64_t records) {
  const std::string where = dir_ + "/" + SegmentName(write_segment_);
  if (!WriteFull(write_fd_.get(), pending, write_bytes_) || ::fdatasync(write_fd_.get()) != 0) {
    const int e = errno;
    if (::ftruncate(write_fd_.get(), static_cast<off_t>(write_bytes_)) != 0) {
      return Error{"spool " + where + ": write failed (" + Errno(e) + ") and cannot cut it back: " + Errno(errno)};
    }
    return Error{"spool " + where + ": " + Errno(e)};
  }
  write_bytes_ += pending.size();
  std::lock_guard<std::mutex> lock(mu_);
  Segment& s = segments_[write_segment_];
  s.bytes = write_bytes_;
  s.records += records;
  return Ok{};
}

Result<SpoolResult> Spool::AddResult(const std::string& sweep, int64_t entry, const std::string& name, int source_fd,
                                     uint64_t max_bytes) {
  const std::string what = "result " + sweep + "/" + std::to_string(entry) + "/" + name;
  if (!IsValidSweepId(sweep) || entry < 0 || !IsValidResultName(name)) {
    return Error{"result: sweep [A-Za-z0-9._-]{1,64}, entry >= 0 and name [A-Za-z0-9._-]{1,255} (not . or ..) are required"};
  }
  struct stat st{};
  if (::fstat(source_fd, &st) != 0) return Error{what + ": " + Errno(errno)};
  if (!S_ISREG(st.st_mode)) return Error{what + ": the descriptor is not a regular file (a pipe or device could block)"};
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    return Error{what + ": " + std::to_string(st.st_size) + " bytes; at most " + std::to_string(max_bytes)};
  }
  SpoolResult r{0, sweep, entry, name, "", 0};
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (result_bytes_ + static_cast<uint64_t>(st.st_size) > options_.max_result_bytes) {
      return Error{"spool " + dir_ + ": full (" + std::to_string(result_bytes_) + " bytes of results; at most " +
                   std::to_string(options_.max_result_bytes) + ")"};
    }
    r.id = next_result_id_++;
  }
  const int dir = results_fd_.get();
  const std::string tmp = kTmpPrefix + std::to_string(r.id);
  const std::string data = ResultFile(r.id, ".data");
  auto fail = [&](const std::string& why) {
    ::unlinkat(dir, tmp.c_str(), 0);
    ::unlinkat(dir, data.c_str(), 0);
    return Error{what + ": " + why};
  };
  UniqueFd out(::openat(dir, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!out.valid()) return fail("cannot create " + tmp + ": " + Errno(errno));
  Sha256 sha;
  std::string buf(256 << 10, '\0');
  for (;;) {
    const ssize_t n = ::pread(source_fd, buf.data(), buf.size(), static_cast<off_t>(r.size));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail("read: " + Errno(errno));
    if (n == 0) break;
    if (r.size + static_cast<uint64_t>(n) > max_bytes) return fail("more than " + std::to_string(max_bytes) + " bytes");
    const std::string_view piece(buf.data(), static_cast<size_t>(n));
    sha.Update(piece);
    if (!WriteFull(out.get(), piece, r.size)) return fail("write: " + Errno(errno));
    r.size += static_cast<uint64_t>(n);
  }
  r.sha256 = sha.Hex();
  if (::fsync(out.get()) != 0) return fail("fsync: " + Errno(errno));
  out.reset();
  if (::renameat(dir, tmp.c_str(), dir, data.c_str()) != 0) return fail("rename: " + Errno(errno));
  if (Status s = spool_format::WriteDurableAt(dir, dir_ + "/" + kResults, ResultFile(r.id, ".meta"), spool_format::ResultMeta(r)); !s) {
    return fail(s.error().message);
  }
  std::lock_guard<std::mutex> lock(mu_);
  result_bytes_ += r.size;
  results_[r.id] = r;
  return r;
}

}  // namespace ix
