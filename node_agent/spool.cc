// Spool: opening a spool directory and recovering what a crash left
// (spool.h). The writer is spool_writer.cc, the replay spool_replay.cc, the
// on-disk format spool_format.cc.
#include "node_agent/spool.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <tuple>
#include <utility>

#include "core/base/file_text.h"
#include "core/base/paths.h"
#include "core/base/text.h"
#include "node_agent/spool_format.h"

namespace ix {

using spool_format::Errno;
using spool_format::SegmentName;
using spool_format::kCursor;
using spool_format::kResults;
using spool_format::kTmpPrefix;
using spool_format::ResultFile;

bool operator<(const SpoolPosition& a, const SpoolPosition& b) {
  return std::tie(a.segment, a.offset) < std::tie(b.segment, b.offset);
}
bool operator==(const SpoolPosition& a, const SpoolPosition& b) {
  return a.segment == b.segment && a.offset == b.offset;
}

Spool::Spool(std::string dir, const SpoolOptions& options, UniqueFd dir_fd, UniqueFd results_fd)
    : dir_(std::move(dir)), options_(options), dir_fd_(std::move(dir_fd)), results_fd_(std::move(results_fd)) {}

Spool::~Spool() = default;

Result<std::unique_ptr<Spool>> Spool::Open(const std::string& dir, const SpoolOptions& options) {
  if (dir.empty() || dir[0] != '/') return Error{"spool '" + dir + "': must be an absolute path"};
  if (Status made = MakeDirs(dir, 0700, 0755, "spool"); !made) return made.error();
  UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir_fd.valid()) return Error{"spool " + dir + ": " + Errno(errno) + (errno == ELOOP ? " (a symlink)" : "")};
  if (Status ok = spool_format::CheckPrivateDir(dir_fd.get(), dir); !ok) return ok.error();
  const std::string results = dir + "/" + kResults;
  if (::mkdirat(dir_fd.get(), kResults, 0700) != 0 && errno != EEXIST) {
    return Error{"spool " + results + ": cannot create: " + Errno(errno)};
  }
  UniqueFd results_fd(::openat(dir_fd.get(), kResults, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!results_fd.valid()) return Error{"spool " + results + ": " + Errno(errno)};
  if (Status ok = spool_format::CheckPrivateDir(results_fd.get(), results); !ok) return ok.error();
  std::unique_ptr<Spool> spool(new Spool(dir, options, std::move(dir_fd), std::move(results_fd)));
  if (Status loaded = spool->Load(); !loaded) return loaded.error();
  return spool;
}

Status Spool::Load() {
  if (Status s = LoadSegments(); !s) return s;
  if (Status s = LoadCursor(); !s) return s;
  if (Status s = LoadResults(); !s) return s;
  if (segments_.empty()) return StartSegment(cursor_.segment + 1);
  write_segment_ = segments_.rbegin()->first;
  write_bytes_ = segments_.rbegin()->second.bytes;
  const std::string name = SegmentName(write_segment_);
  write_fd_.reset(::openat(dir_fd_.get(), name.c_str(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!write_fd_.valid()) return Error{"spool " + dir_ + "/" + name + ": " + Errno(errno)};
  return Ok{};
}

// Every segment, its torn tail (a crash mid-write) cut off, its lines counted.
Status Spool::LoadSegments() {
  Result<std::vector<std::string>> names = spool_format::ListDir(dir_fd_.get(), dir_);
  if (!names) return names.error();
  for (const std::string& name : names.value()) {
    uint64_t n = 0;
    if (name == std::string(kCursor) + ".tmp") ::unlinkat(dir_fd_.get(), name.c_str(), 0);
    if (!spool_format::ParseSegmentName(name, n)) continue;
    const std::string where = dir_ + "/" + name;
    UniqueFd fd(::openat(dir_fd_.get(), name.c_str(), O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    struct stat st{};
    if (!fd.valid() || ::fstat(fd.get(), &st) != 0) return Error{"spool " + where + ": " + Errno(errno)};
    if (!S_ISREG(st.st_mode)) return Error{"spool " + where + ": not a regular file"};
    Result<uint64_t> whole = spool_format::WholeLinesLength(fd.get(), static_cast<uint64_t>(st.st_size));
    if (!whole) return Error{"spool " + where + ": " + whole.error().message};
    if (whole.value() != static_cast<uint64_t>(st.st_size)) {
      if (::ftruncate(fd.get(), static_cast<off_t>(whole.value())) != 0 || ::fsync(fd.get()) != 0) {
        return Error{"spool " + where + ": cannot cut off its torn last line: " + Errno(errno)};
      }
      notes_.push_back(where + ": cut off a torn last line of " +
                       std::to_string(static_cast<uint64_t>(st.st_size) - whole.value()) + " bytes (a crash mid-write)");
    }
    const int64_t lines = spool_format::CountLines(fd.get(), 0, whole.value());
    if (lines < 0) return Error{"spool " + where + ": " + Errno(errno)};
    segments_[n] = Segment{whole.value(), static_cast<uint64_t>(lines)};
  }
  return Ok{};
}

Status Spool::LoadCursor() {
  int err = 0;
  const std::string text = ReadFileTextAt(dir_fd_.get(), kCursor, &err, 4096);
  const std::string where = dir_ + "/" + kCursor;
  if (err == ENOENT) {
    cursor_ = SpoolPosition{segments_.empty() ? 0 : segments_.begin()->first, 0, 0};
    return Ok{};
  }
  if (err != 0) return Error{"spool " + where + ": " + Errno(err)};
  SpoolPosition at;
  if (!spool_format::ParseCursorText(text, at)) {
    return Error{"spool " + where + ": expected 'SEGMENT OFFSET', got '" + std::string(Trim(text)) +
                 "'; remove the file to deliver every event in the spool again"};
  }
  // Segments the cursor has passed: their deletion was cut short.
  while (!segments_.empty() && segments_.begin()->first < at.segment) {
    ::unlinkat(dir_fd_.get(), SegmentName(segments_.begin()->first).c_str(), 0);
    segments_.erase(segments_.begin());
  }
  auto it = segments_.find(at.segment);
  if (it == segments_.end()) {  // its segment is gone: the next one, from its start
    cursor_ = SpoolPosition{segments_.empty() ? at.segment : segments_.begin()->first, 0, 0};
    return Ok{};
  }
  if (at.offset > it->second.bytes) {
    notes_.push_back(where + ": offset " + std::to_string(at.offset) + " is past the end of " +
                     SegmentName(at.segment) + "; moved back to " + std::to_string(it->second.bytes));
    at.offset = it->second.bytes;
  }
  UniqueFd fd(::openat(dir_fd_.get(), SegmentName(at.segment).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  const int64_t lines = fd.valid() ? spool_format::CountLines(fd.get(), 0, at.offset) : -1;
  if (lines < 0) return Error{"spool " + dir_ + "/" + SegmentName(at.segment) + ": " + Errno(errno)};
  at.line = static_cast<uint64_t>(lines);
  cursor_ = at;
  return Ok{};
}

Status Spool::LoadResults() {
  const std::string where = dir_ + "/" + kResults;
  Result<std::vector<std::string>> names = spool_format::ListDir(results_fd_.get(), where);
  if (!names) return names.error();
  std::map<uint64_t, int> parts;  // id -> 1: data, 2: meta, 3: both
  for (const std::string& name : names.value()) {
    const size_t dot = name.find('.');
    uint64_t id = 0;
    if (name.rfind(kTmpPrefix, 0) == 0 || (name.size() > 9 && name.substr(name.size() - 9) == ".meta.tmp")) {
      ::unlinkat(results_fd_.get(), name.c_str(), 0);
      notes_.push_back(where + "/" + name + ": removed a half-written file");
    } else if (dot != std::string::npos && ParseUnsigned(std::string_view(name).substr(0, dot), id)) {
      const std::string ext = name.substr(dot);
      if (ext == ".data") parts[id] |= 1;
      if (ext == ".meta") parts[id] |= 2;
    }
  }
  for (const auto& [id, has] : parts) {
    next_result_id_ = std::max(next_result_id_, id + 1);
    int err = 0;
    struct stat st{};
    const std::string meta = has == 3 ? ReadFileTextAt(results_fd_.get(), ResultFile(id, ".meta"), &err, 64 << 10) : "";
    Result<SpoolResult> r = has == 3 && err == 0 ? spool_format::ParseResultMeta(meta, id) : Result<SpoolResult>(Error{""});
    if (r && ::fstatat(results_fd_.get(), ResultFile(id, ".data").c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) == r.value().size) {
      result_bytes_ += r.value().size;
      results_[id] = std::move(r).value();
      continue;
    }
    ::unlinkat(results_fd_.get(), ResultFile(id, ".meta").c_str(), 0);
    ::unlinkat(results_fd_.get(), ResultFile(id, ".data").c_str(), 0);
    notes_.push_back(where + "/" + std::to_string(id) + ": removed an incomplete result (a crash while it was added)");
  }
  return Ok{};
}

SpoolStats Spool::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  SpoolStats s;
  for (const auto& [n, seg] : segments_) {
    s.event_bytes += seg.bytes;
    if (n >= cursor_.segment) s.pending_records += seg.records;
  }
  s.pending_records -= std::min(s.pending_records, cursor_.line);
  s.segments = segments_.size();
  s.pending_results = results_.size();
  s.result_bytes = result_bytes_;
  return s;
}

std::vector<std::string> Spool::notes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return notes_;
}

}  // namespace ix
