// The spool's on-disk format and file primitives (spool_format.h).
#include "node_agent/spool_format.h"

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

#include "core/base/json_text.h"
#include "core/base/sha256.h"
#include "core/base/text.h"
#include "core/base/unique_fd.h"
#include "node_agent/event_socket.h"

namespace ix::spool_format {
namespace {

constexpr size_t kChunk = 1 << 20;

}  // namespace

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

std::string CursorText(const SpoolPosition& position) {
  return std::to_string(position.segment) + " " + std::to_string(position.offset) + "\n";
}

bool ParseCursorText(std::string_view text, SpoolPosition& position) {
  const std::vector<std::string_view> fields = Split(Trim(text), ' ');
  position = SpoolPosition{};
  return fields.size() == 2 && ParseUnsigned(fields[0], position.segment) && ParseUnsigned(fields[1], position.offset);
}

std::string ResultFile(uint64_t id, const char* ext) { return std::to_string(id) + ext; }

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

}  // namespace ix::spool_format
