#include "core/base/proc_fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/base/text.h"

namespace ix {
namespace {

std::string Errno(int err) { return std::strerror(err); }

// Reads a small /proc file in one go; "" with *err set on failure.
// `path` is relative to /proc (ProcDirFd), e.g. "12/stat".
std::string ReadSmall(const char* path, int* err) {
  const int fd = ::openat(ProcDirFd(), path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *err = errno;
    return {};
  }
  char buf[4096];
  std::string out;
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *err = errno;
      ::close(fd);
      return {};
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  *err = 0;
  return out;
}

}  // namespace

int ProcDirFd() {
  // Opened once, never closed: a detached /proc (the container's rootfs
  // removed) stays readable through it. Close-on-exec, so no program
  // started from here inherits it.
  static const int fd = ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  return fd;
}

Result<ProcessInfo> ParseProcStat(std::string_view text, const std::string& where) {
  // "PID (COMM) STATE PPID PGRP SESSION ...": COMM may hold spaces and
  // parentheses, so it ends at the last ')'.
  const size_t open = text.find('(');
  const size_t close = text.rfind(')');
  auto bad = [&](const std::string& what) { return Error{where + ": " + what}; };
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return bad("expected 'PID (COMM) STATE ...'");
  }
  ProcessInfo p;
  int64_t v = 0;
  std::string_view pid_text = text.substr(0, open);
  while (!pid_text.empty() && pid_text.back() == ' ') pid_text.remove_suffix(1);
  if (!ParseSigned(pid_text, v)) return bad("bad pid '" + std::string(pid_text) + "'");
  p.pid = static_cast<pid_t>(v);
  p.comm = std::string(text.substr(open + 1, close - open - 1));
  std::array<std::string_view, 22> f;  // f[0] is field 3 (state)
  size_t fields = 0;
  size_t pos = close + 1;
  while (pos < text.size() && fields < f.size()) {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\n')) ++pos;
    size_t end = pos;
    while (end < text.size() && text[end] != ' ' && text[end] != '\n') ++end;
    if (end > pos) f[fields++] = text.substr(pos, end - pos);
    pos = end;
  }
  if (fields < 20) return bad("too few fields (" + std::to_string(fields + 2) + ", need 22)");
  if (f[0].size() != 1) return bad("bad state '" + std::string(f[0]) + "'");
  p.state = f[0][0];
  int64_t ppid = 0, pgid = 0, sid = 0;
  if (!ParseSigned(f[1], ppid) || !ParseSigned(f[2], pgid) || !ParseSigned(f[3], sid)) {
    return bad("bad ppid/pgrp/session fields");
  }
  p.ppid = static_cast<pid_t>(ppid);
  p.pgid = static_cast<pid_t>(pgid);
  p.sid = static_cast<pid_t>(sid);
  if (!ParseUnsigned(f[19], p.start_time)) return bad("bad start time '" + std::string(f[19]) + "'");
  // Fields 14, 15 (utime, stime) and 24 (rss): what a sampler reads; a
  // reading that is not a number stays 0 (identity matters, these do not).
  (void)ParseUnsigned(f[11], p.utime_ticks);
  (void)ParseUnsigned(f[12], p.stime_ticks);
  if (fields >= 22) (void)ParseUnsigned(f[21], p.rss_pages);
  return p;
}

Result<ProcessInfo> ReadProcessInfo(pid_t pid) {
  char path[32];
  std::snprintf(path, sizeof path, "%d/stat", static_cast<int>(pid));
  int err = 0;
  const std::string text = ReadSmall(path, &err);
  const std::string where = "/proc/" + std::string(path);
  if (err != 0) return Error{where + ": " + Errno(err)};
  return ParseProcStat(text, where);
}

Result<std::vector<ProcessInfo>> ListProcesses() {
  // Watching and stopping a step scan /proc often: one stack buffer and
  // openat per process, no allocation but the result's.
  const int list_fd = ::openat(ProcDirFd(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR* dir = list_fd >= 0 ? ::fdopendir(list_fd) : nullptr;
  if (!dir) {
    const int e = errno;
    if (list_fd >= 0) ::close(list_fd);
    return Error{"cannot list /proc: " + Errno(e)};
  }
  static const std::string kWhere = "/proc/PID/stat";
  std::vector<ProcessInfo> out;
  out.reserve(256);
  char path[40];
  char buf[1024];
  while (dirent* e = ::readdir(dir)) {
    uint64_t pid = 0;
    if (!ParseUnsigned(e->d_name, pid) || pid == 0) continue;
    std::snprintf(path, sizeof path, "%llu/stat", static_cast<unsigned long long>(pid));  // the name, at most 20 digits
    const int fd = ::openat(::dirfd(dir), path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;  // it has just gone
    ssize_t n;
    do {
      n = ::read(fd, buf, sizeof buf);
    } while (n < 0 && errno == EINTR);
    ::close(fd);
    Result<ProcessInfo> p = n > 0 && static_cast<size_t>(n) < sizeof buf
                                ? ParseProcStat(std::string_view(buf, static_cast<size_t>(n)), kWhere)
                                : ReadProcessInfo(static_cast<pid_t>(pid));  // a longer line: read it whole
    if (p) out.push_back(std::move(p).value());
  }
  ::closedir(dir);
  return out;
}

uint64_t LiveStartTime(pid_t pid) {
  Result<ProcessInfo> p = ReadProcessInfo(pid);
  return p && !p.value().exited() ? p.value().start_time : 0;
}

std::string BootId() {
  int err = 0;
  const std::string text = ReadSmall("sys/kernel/random/boot_id", &err);
  std::string boot;
  if (err != 0) return boot;
  for (char c : text) {
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-') boot += c;
  }
  return boot;
}

}  // namespace ix
