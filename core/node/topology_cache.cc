// DiscoverTopologyCached and LoadTopologyXmlCached (topology.h): hwloc's
// ~1 ms XML parse and 12+ ms discovery run once, then every step reads the
// result as JSON (topology_json.h) in microseconds. docs/PLACEMENT.md, "The
// topology cache".
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>

#include "core/base/proc_fs.h"
#include "core/base/unique_fd.h"
#include "core/node/topology.h"
#include "core/node/topology_json.h"

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
  const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  struct stat st{};
  if (!fd.valid() || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() ||
      (st.st_mode & (S_IWGRP | S_IWOTH)) != 0 || st.st_size > kMaxCacheBytes) {
    return std::nullopt;
  }
  const std::optional<std::string> text = ReadAll(fd.get(), static_cast<size_t>(st.st_size));
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

// How long a child may take to parse an XML topology (hwloc needs ~1 ms).
constexpr auto kXmlParseDeadline = std::chrono::seconds(30);

// The child's answer, read to its end or until `deadline`; false on timeout.
bool ReadAnswer(int fd, std::string& out, std::chrono::steady_clock::time_point deadline) {
  char buf[65536];
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    struct pollfd p{fd, POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return r == 0 ? false : true;
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;
    if (out.size() < static_cast<size_t>(kMaxCacheBytes)) out.append(buf, static_cast<size_t>(n));
  }
}

// LoadTopologyXml in a child process. The system's hwloc crashes on some
// malformed XML (docs/FUZZING.md), and the plugin parses topology= inside
// slurmstepd, which a bad file must never take down: the child sends its
// result back as the cache JSON ("T...") or an error ("E..."), and a crash
// or a hang (30 s) is an error naming the file.
Result<Topology> LoadTopologyXmlIsolated(const std::string& path) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return Error{"topology " + path + ": pipe: " + std::strerror(errno)};
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int e = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    return Error{"topology " + path + ": cannot fork to parse it: " + std::strerror(e)};
  }
  if (pid == 0) {
    ::close(fds[0]);
    Result<Topology> t = LoadTopologyXml(path);
    const std::string out = t ? "T" + TopologyToCacheJson(t.value()) : "E" + t.error().message;
    for (size_t done = 0; done < out.size();) {
      const ssize_t n = ::write(fds[1], out.data() + done, out.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) ::_exit(1);
      done += static_cast<size_t>(n);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string answer;
  const bool in_time = ReadAnswer(fds[0], answer, std::chrono::steady_clock::now() + kXmlParseDeadline);
  ::close(fds[0]);
  if (!in_time) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!in_time) return Error{"topology " + path + ": hwloc did not parse it within 30 s"};
  if (WIFSIGNALED(status)) {
    return Error{"topology " + path + ": hwloc's XML parser crashed on it (" + strsignal(WTERMSIG(status)) +
                 "): the file is malformed; write it again with `lstopo --of xml`"};
  }
  if (!answer.empty() && answer[0] == 'E') return Error{answer.substr(1)};
  if (answer.empty() || answer[0] != 'T') return Error{"topology " + path + ": its parser gave no answer"};
  Result<Topology> t = TopologyFromCacheJson(std::string_view(answer).substr(1), path);
  if (t) t.value().source = path;
  return t;
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
  Result<Topology> t = LoadTopologyXmlIsolated(path);
  // Only what was read from an unchanged file is cached; errors never are.
  if (t && FileIdentity(path) == before) WriteCache(cache, TopologyToCacheJson(t.value()));
  return t;
}

}  // namespace ix
