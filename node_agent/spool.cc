#include "node_agent/spool.h"

#include <dirent.h>
#include <fcntl.h>
#include <rapidjson/document.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <tuple>
#include <utility>

#include "core/base/file_text.h"
#include "core/base/json_text.h"
#include "core/base/paths.h"
#include "core/base/sha256.h"
#include "core/base/text.h"
#include "node_agent/event_socket.h"

namespace ix {

bool operator<(const SpoolPosition& a, const SpoolPosition& b) {
  return std::tie(a.segment, a.offset) < std::tie(b.segment, b.offset);
}
bool operator==(const SpoolPosition& a, const SpoolPosition& b) {
  return a.segment == b.segment && a.offset == b.offset;
}

namespace {

constexpr char kCursor[] = "cursor";
constexpr char kResults[] = "results";
constexpr char kTmpPrefix[] = ".tmp-";
constexpr size_t kChunk = 1 << 20;

std::string Errno(int e) { return std::strerror(e); }

std::string SegmentName(uint64_t n) {
  char name[64];
  std::snprintf(name, sizeof name, "events-%016" PRIu64 ".jsonl", n);
  return name;
}

bool ParseSegmentName(std::string_view name, uint64_t& n) {
  constexpr std::string_view kPre = "events-", kPost = ".jsonl";
  if (name.size() != kPre.size() + 16 + kPost.size()) return false;
  if (name.substr(0, kPre.size()) != kPre || name.substr(name.size() - kPost.size()) != kPost) return false;
  return ParseUnsigned(name.substr(kPre.size(), 16), n);
}

// The names in the directory open at `fd` (without . and ..).
Result<std::vector<std::string>> ListDir(int fd, const std::string& where) {
  const int list = ::dup(fd);
  DIR* d = list >= 0 ? ::fdopendir(list) : nullptr;
  if (!d) {
    if (list >= 0) ::close(list);
    return Error{"cannot list " + where + ": " + Errno(errno)};
  }
  ::rewinddir(d);
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  ::closedir(d);
  return names;
}

// Reads exactly `n` bytes at `off` unless the file ends first; the count
// read, or -1 with errno.
ssize_t PreadFull(int fd, char* buf, size_t n, uint64_t off) {
  size_t done = 0;
  while (done < n) {
    const ssize_t r = ::pread(fd, buf + done, n - done, static_cast<off_t>(off + done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    if (r == 0) break;
    done += static_cast<size_t>(r);
  }
  return static_cast<ssize_t>(done);
}

bool WriteFull(int fd, std::string_view data, uint64_t off) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t r = ::pwrite(fd, data.data() + done, data.size() - done, static_cast<off_t>(off + done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      if (r == 0) errno = EIO;
      return false;
    }
    done += static_cast<size_t>(r);
  }
  return true;
}

// The '\n's in [from, to) of `fd`, or -1 on a read error.
int64_t CountLines(int fd, uint64_t from, uint64_t to) {
  std::string buf(kChunk, '\0');
  int64_t lines = 0;
  while (from < to) {
    const ssize_t n = PreadFull(fd, buf.data(), static_cast<size_t>(std::min<uint64_t>(kChunk, to - from)), from);
    if (n <= 0) return -1;
    lines += std::count(buf.data(), buf.data() + n, '\n');
    from += static_cast<uint64_t>(n);
  }
  return lines;
}

// The length of `fd` up to and including its last '\n' (0 when none).
Result<uint64_t> WholeLinesLength(int fd, uint64_t size) {
  std::string buf(64 << 10, '\0');
  uint64_t end = size;
  while (end > 0) {
    const uint64_t start = end > buf.size() ? end - buf.size() : 0;
    const ssize_t n = PreadFull(fd, buf.data(), static_cast<size_t>(end - start), start);
    if (n != static_cast<ssize_t>(end - start)) return Error{Errno(n < 0 ? errno : EIO)};
    for (size_t i = static_cast<size_t>(n); i > 0; --i) {
      if (buf[i - 1] == '\n') return start + i;
    }
    end = start;
  }
  return uint64_t{0};
}

// A directory only the euid may enter: owned by it, no group or other bits.
Status CheckPrivateDir(int fd, const std::string& where) {
  struct stat st{};
  if (::fstat(fd, &st) != 0) return Error{"spool " + where + ": " + Errno(errno)};
  if (st.st_uid == ::geteuid() && (st.st_mode & 077) == 0) return Ok{};
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  return Error{"spool " + where + ": owned by uid " + std::to_string(st.st_uid) + " with mode " + mode +
               "; it must be owned by uid " + std::to_string(::geteuid()) +
               " (the agent) and not accessible by group or others (chmod 0700)"};
}

// NAME under `dir` replaced at once and durably: NAME.tmp written,
// fsync'd, renamed over NAME, then the directory fsync'd.
Status WriteDurableAt(int dir, const std::string& where, const std::string& name, std::string_view text) {
  const std::string tmp = name + ".tmp";
  ::unlinkat(dir, tmp.c_str(), 0);
  UniqueFd fd(::openat(dir, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd.valid()) return Error{"cannot write " + where + "/" + tmp + ": " + Errno(errno)};
  if (!WriteFull(fd.get(), text, 0) || ::fsync(fd.get()) != 0) {
    const int e = errno;
    ::unlinkat(dir, tmp.c_str(), 0);
    return Error{"cannot write " + where + "/" + tmp + ": " + Errno(e)};
  }
  fd.reset();
  if (::renameat(dir, tmp.c_str(), dir, name.c_str()) != 0) {
    const int e = errno;
    ::unlinkat(dir, tmp.c_str(), 0);
    return Error{"cannot rename " + where + "/" + tmp + ": " + Errno(e)};
  }
  if (::fsync(dir) != 0) return Error{"cannot fsync " + where + ": " + Errno(errno)};
  return Ok{};
}

// Moves the whole lines of `buf` (read at batch.end) into `batch` while
// the limits allow; `taken` is the bytes used. True when the batch is full.
bool TakeLines(const std::string& buf, size_t max_records, size_t max_bytes, SpoolBatch& batch, size_t& taken) {
  SpoolPosition& pos = batch.end;
  while (taken < buf.size()) {
    const char* nl = static_cast<const char*>(std::memchr(buf.data() + taken, '\n', buf.size() - taken));
    if (!nl) return false;
    const size_t len = static_cast<size_t>(nl - buf.data()) - taken;
    if (batch.records.size() >= max_records || (!batch.records.empty() && batch.bytes + len + 1 > max_bytes)) {
      return true;
    }
    pos.offset += len + 1;
    ++pos.line;
    if (len > 0) {  // an empty line is no record (Append writes none)
      batch.records.push_back(SpoolRecord{buf.substr(taken, len), pos});
      batch.bytes += len + 1;
    }
    taken += len + 1;
  }
  return batch.records.size() >= max_records;
}

std::string ResultFile(uint64_t id, const char* ext) { return std::to_string(id) + ext; }

}  // namespace

Spool::Spool(std::string dir, const SpoolOptions& options, UniqueFd dir_fd, UniqueFd results_fd)
    : dir_(std::move(dir)), options_(options), dir_fd_(std::move(dir_fd)), results_fd_(std::move(results_fd)) {}

Spool::~Spool() = default;

Result<std::unique_ptr<Spool>> Spool::Open(const std::string& dir, const SpoolOptions& options) {
  if (dir.empty() || dir[0] != '/') return Error{"spool '" + dir + "': must be an absolute path"};
  if (Status made = MakeDirs(dir, 0700, 0755, "spool"); !made) return made.error();
  UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir_fd.valid()) return Error{"spool " + dir + ": " + Errno(errno) + (errno == ELOOP ? " (a symlink)" : "")};
  if (Status ok = CheckPrivateDir(dir_fd.get(), dir); !ok) return ok.error();
  const std::string results = dir + "/" + kResults;
  if (::mkdirat(dir_fd.get(), kResults, 0700) != 0 && errno != EEXIST) {
    return Error{"spool " + results + ": cannot create: " + Errno(errno)};
  }
  UniqueFd results_fd(::openat(dir_fd.get(), kResults, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!results_fd.valid()) return Error{"spool " + results + ": " + Errno(errno)};
  if (Status ok = CheckPrivateDir(results_fd.get(), results); !ok) return ok.error();
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
  Result<std::vector<std::string>> names = ListDir(dir_fd_.get(), dir_);
  if (!names) return names.error();
  for (const std::string& name : names.value()) {
    uint64_t n = 0;
    if (name == std::string(kCursor) + ".tmp") ::unlinkat(dir_fd_.get(), name.c_str(), 0);
    if (!ParseSegmentName(name, n)) continue;
    const std::string where = dir_ + "/" + name;
    UniqueFd fd(::openat(dir_fd_.get(), name.c_str(), O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    struct stat st{};
    if (!fd.valid() || ::fstat(fd.get(), &st) != 0) return Error{"spool " + where + ": " + Errno(errno)};
    if (!S_ISREG(st.st_mode)) return Error{"spool " + where + ": not a regular file"};
    Result<uint64_t> whole = WholeLinesLength(fd.get(), static_cast<uint64_t>(st.st_size));
    if (!whole) return Error{"spool " + where + ": " + whole.error().message};
    if (whole.value() != static_cast<uint64_t>(st.st_size)) {
      if (::ftruncate(fd.get(), static_cast<off_t>(whole.value())) != 0 || ::fsync(fd.get()) != 0) {
        return Error{"spool " + where + ": cannot cut off its torn last line: " + Errno(errno)};
      }
      notes_.push_back(where + ": cut off a torn last line of " +
                       std::to_string(static_cast<uint64_t>(st.st_size) - whole.value()) + " bytes (a crash mid-write)");
    }
    const int64_t lines = CountLines(fd.get(), 0, whole.value());
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
  const std::vector<std::string_view> fields = Split(Trim(text), ' ');
  SpoolPosition at;
  if (fields.size() != 2 || !ParseUnsigned(fields[0], at.segment) || !ParseUnsigned(fields[1], at.offset)) {
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
  const int64_t lines = fd.valid() ? CountLines(fd.get(), 0, at.offset) : -1;
  if (lines < 0) return Error{"spool " + dir_ + "/" + SegmentName(at.segment) + ": " + Errno(errno)};
  at.line = static_cast<uint64_t>(lines);
  cursor_ = at;
  return Ok{};
}

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
    const ssize_t got = PreadFull(fd.get(), buf.data(), want, pos.offset);
    if (got != static_cast<ssize_t>(want)) {
      return Error{"spool " + where + ": " + (got < 0 ? Errno(errno) : "shorter than what was written")};
    }
    size_t taken = 0;
    if (TakeLines(buf, max_records, max_bytes, batch, taken)) break;
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
  return WriteDurableAt(dir_fd_.get(), dir_, kCursor,
                        std::to_string(position.segment) + " " + std::to_string(position.offset) + "\n");
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

// --- result files ---

namespace {

std::string ResultMeta(const SpoolResult& r) {
  return JsonText(false, [&](auto& w) {
    w.StartObject();
    w.Key("id");
    w.Uint64(r.id);
    w.Key("sweep");
    w.String(r.sweep.c_str());
    w.Key("entry");
    w.Int64(r.entry);
    w.Key("name");
    w.String(r.name.c_str());
    w.Key("sha256");
    w.String(r.sha256.c_str());
    w.Key("size");
    w.Uint64(r.size);
    w.EndObject();
  }) + "\n";
}

Result<SpoolResult> ParseResultMeta(const std::string& text, uint64_t id) {
  rapidjson::Document d;
  d.Parse(text.c_str(), text.size());
  auto str = [&](const char* k) { return d.IsObject() && d.HasMember(k) && d[k].IsString(); };
  auto num = [&](const char* k) { return d.IsObject() && d.HasMember(k) && d[k].IsUint64(); };
  if (d.HasParseError() || !num("id") || !str("sweep") || !d.HasMember("entry") || !d["entry"].IsInt64() ||
      !str("name") || !str("sha256") || !num("size") || d["id"].GetUint64() != id) {
    return Error{"not a result description"};
  }
  SpoolResult r{id, d["sweep"].GetString(), d["entry"].GetInt64(), d["name"].GetString(), d["sha256"].GetString(),
                d["size"].GetUint64()};
  if (!IsValidSweepId(r.sweep) || r.entry < 0 || !IsValidResultName(r.name) || !IsSha256Hex(r.sha256)) {
    return Error{"not a result description"};
  }
  return r;
}

}  // namespace

Status Spool::LoadResults() {
  const std::string where = dir_ + "/" + kResults;
  Result<std::vector<std::string>> names = ListDir(results_fd_.get(), where);
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
    Result<SpoolResult> r = has == 3 && err == 0 ? ParseResultMeta(meta, id) : Result<SpoolResult>(Error{""});
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
  if (Status s = WriteDurableAt(dir, dir_ + "/" + kResults, ResultFile(r.id, ".meta"), ResultMeta(r)); !s) {
    return fail(s.error().message);
  }
  std::lock_guard<std::mutex> lock(mu_);
  result_bytes_ += r.size;
  results_[r.id] = r;
  return r;
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
