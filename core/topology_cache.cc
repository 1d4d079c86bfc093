// DiscoverTopologyCached and LoadTopologyXmlCached (topology.h): hwloc's
// ~1 ms XML parse and 12+ ms discovery run once, then every step reads the
// result as JSON (topology_json.h) in microseconds. docs/PLACEMENT.md, "The
// topology cache".
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <optional>
#include <string>

#include "core/topology.h"
#include "core/topology_json.h"

namespace ix {
namespace {

// Far above any real topology (a 2-socket B300 node is ~20 KiB).
constexpr off_t kMaxCacheBytes = 64 << 20;

// All of an open file, or nullopt on a read error.
std::optional<std::string> ReadAll(int fd, size_t size_hint) {
  std::string text(size_hint, '\0');
  size_t got = 0;
  while (true) {
    if (got == text.size()) text.resize(text.size() + 4096);
    const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  text.resize(got);
  return text;
}

// The cache file at `path`, parsed, when it can be trusted: a regular file
// (a link is not followed), owned by this user, not writable by group or
// others, so only this user (root, for slurmstepd) can have put it there.
// fstat on the opened file, so what is checked is what is read. Anything
// else (absent, unsafe, unreadable, stale version, malformed) is nullopt:
// the caller rebuilds it from hwloc.
std::optional<Topology> ReadCache(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st{};
  std::optional<std::string> text;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() &&
      (st.st_mode & (S_IWGRP | S_IWOTH)) == 0 && st.st_size <= kMaxCacheBytes) {
    text = ReadAll(fd, static_cast<size_t>(st.st_size));
  }
  ::close(fd);
  if (!text) return std::nullopt;
  Result<Topology> t = TopologyFromCacheJson(*text, path);
  if (!t) return std::nullopt;
  return std::move(t).value();
}

// Replaces `path` atomically (a private temporary, then rename), mode 0644
// whatever the umask, so ReadCache accepts it. Best effort: a cache that
// cannot be written only costs the next step the hwloc time again.
void WriteCache(const std::string& path, const std::string& text) {
  static std::atomic<unsigned> counter{0};
  const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  ::unlink(tmp.c_str());  // left by a dead process with this pid
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return;
  bool ok = ::fchmod(fd, 0644) == 0;
  for (size_t done = 0; ok && done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<size_t>(n);
  }
  ok = ::close(fd) == 0 && ok;
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) ::unlink(tmp.c_str());
}

// This boot's id (letters, digits, dashes only, so it is safe in a file
// name), or "" when it cannot be read.
std::string BootId() {
  std::string boot;
  const int fd = ::open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return boot;
  std::optional<std::string> text = ReadAll(fd, 64);
  ::close(fd);
  if (!text) return boot;
  for (char c : *text) {
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-') boot += c;
  }
  return boot;
}

// What identifies one version of a file's content: any write changes mtime
// and ctime, a replacement (editor, rsync) the inode; ctime cannot be set
// back (touch -d or cp -p can fake mtime, not ctime).
std::optional<std::string> FileIdentity(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  char buf[160];
  std::snprintf(buf, sizeof buf, "%llx-%llx-%llx-%lld.%09ld-%lld.%09ld", static_cast<unsigned long long>(st.st_dev),
                static_cast<unsigned long long>(st.st_ino), static_cast<unsigned long long>(st.st_size),
                static_cast<long long>(st.st_mtim.tv_sec), st.st_mtim.tv_nsec,
                static_cast<long long>(st.st_ctim.tv_sec), st.st_ctim.tv_nsec);
  return std::string(buf);
}

}  // namespace

Result<Topology> DiscoverTopologyCached(const std::string& cache_dir) {
  const std::string boot = cache_dir.empty() ? std::string() : BootId();
  if (boot.empty()) return DiscoverTopology();
  const std::string path = cache_dir + "/topology-" + boot + ".json";
  if (std::optional<Topology> cached = ReadCache(path)) {
    cached->source = "this machine (cached in " + path + ")";
    return std::move(*cached);
  }
  Result<Topology> t = DiscoverTopology();
  if (t) WriteCache(path, TopologyToCacheJson(t.value()));
  return t;
}

Result<Topology> LoadTopologyXmlCached(const std::string& path, const std::string& cache_dir) {
  const std::optional<std::string> before = cache_dir.empty() ? std::nullopt : FileIdentity(path);
  if (!before) return LoadTopologyXml(path);
  const std::string cache = cache_dir + "/topology-xml-" + *before + ".json";
  if (std::optional<Topology> cached = ReadCache(cache)) {
    cached->source = path;  // as LoadTopologyXml has it, whatever path reached the same file
    return std::move(*cached);
  }
  Result<Topology> t = LoadTopologyXml(path);
  // Only what was read from an unchanged file is cached; errors never are.
  if (t && FileIdentity(path) == before) WriteCache(cache, TopologyToCacheJson(t.value()));
  return t;
}

}  // namespace ix
