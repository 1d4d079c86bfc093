#include "spank_plugin/step_backstop.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>

#include "core/base/file_text.h"
#include "core/node/ports.h"

namespace ix {
namespace {

std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    const size_t start = i;
    while (i < line.size() && line[i] != ' ') ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

template <class T>
bool ParseNumber(std::string_view s, T& out, int base = 10) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out, base);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// The socket inodes `pid` holds: its fd links "socket:[INODE]".
std::set<uint64_t> SocketInodes(pid_t pid) {
  std::set<uint64_t> out;
  const std::string dir = std::to_string(pid) + "/fd";
  const int fd = ::openat(ProcDirFd(), dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR* d = fd >= 0 ? ::fdopendir(fd) : nullptr;
  if (!d) {
    if (fd >= 0) ::close(fd);
    return out;
  }
  char link[64];
  while (dirent* e = ::readdir(d)) {
    const ssize_t n = ::readlinkat(::dirfd(d), e->d_name, link, sizeof link - 1);
    if (n <= 0) continue;
    const std::string_view l(link, static_cast<size_t>(n));
    uint64_t inode = 0;
    if (l.size() > 9 && l.substr(0, 8) == "socket:[" && l.back() == ']' &&
        ParseNumber(l.substr(8, l.size() - 9), inode)) {
      out.insert(inode);
    }
  }
  ::closedir(d);
  return out;
}

}  // namespace

std::vector<ListenSocket> ParseListenSockets(std::string_view text, const std::set<int>& ports) {
  std::vector<ListenSocket> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    const std::vector<std::string_view> f = Fields(text.substr(pos, nl - pos));
    pos = nl + 1;
    if (f.size() < 10 || f[3] != "0A") continue;  // 0A: TCP_LISTEN
    const size_t colon = f[1].rfind(':');
    int port = 0;
    ListenSocket s;
    if (colon == std::string_view::npos || !ParseNumber(f[1].substr(colon + 1), port, 16) ||
        !ParseNumber(f[9], s.inode) || !ports.count(port)) {
      continue;
    }
    s.port = port;
    out.push_back(s);
  }
  return out;
}

std::vector<ProcessInfo> Leftovers(const std::vector<OwnedProcess>& table, const std::vector<ProcessId>& remembered,
                                   const std::set<pid_t>& listeners, uid_t uid, pid_t self) {
  std::set<pid_t> picked, groups;
  for (const OwnedProcess& p : table) {
    const bool known = std::find(remembered.begin(), remembered.end(), p.info.id()) != remembered.end();
    if (p.info.exited() || p.info.pid <= 1 || p.info.pid == self) continue;
    if (known || (listeners.count(p.info.pid) && p.uid == uid)) {
      picked.insert(p.info.pid);
      // Only a group it leads (as every process ix-stepd starts does): a
      // stray listener in a shell's group must not take the shell along.
      if (p.info.pgid == p.info.pid) groups.insert(p.info.pgid);
    }
  }
  std::vector<ProcessInfo> out;
  for (const OwnedProcess& p : table) {
    if (p.info.exited() || p.info.pid <= 1 || p.info.pid == self) continue;
    if (picked.count(p.info.pid) || (groups.count(p.info.pgid) && p.uid == uid && p.info.pgid > 1)) {
      out.push_back(p.info);
    }
  }
  return out;
}

Result<std::vector<OwnedProcess>> ListOwnedProcesses() {
  Result<std::vector<ProcessInfo>> all = ListProcesses();
  if (!all) return all.error();
  std::vector<OwnedProcess> out;
  out.reserve(all.value().size());
  for (ProcessInfo& p : all.value()) {
    struct stat st{};
    if (::fstatat(ProcDirFd(), std::to_string(p.pid).c_str(), &st, 0) != 0) continue;  // gone
    out.push_back(OwnedProcess{std::move(p), st.st_uid});
  }
  return out;
}

std::set<pid_t> ListenersOn(const std::vector<OwnedProcess>& table, const std::set<int>& ports, uid_t uid) {
  std::set<uint64_t> inodes;
  for (const char* name : {"net/tcp", "net/tcp6"}) {
    int err = 0;
    const std::string text = ReadFileTextAt(ProcDirFd(), name, &err, size_t{64} << 20);
    for (const ListenSocket& s : ParseListenSockets(text, ports)) inodes.insert(s.inode);
  }
  std::set<pid_t> out;
  if (inodes.empty()) return out;
  for (const OwnedProcess& p : table) {
    if (p.uid != uid || p.info.exited()) continue;
    for (uint64_t i : SocketInodes(p.info.pid)) {
      if (inodes.count(i)) out.insert(p.info.pid);
    }
  }
  return out;
}

Result<std::vector<ProcessInfo>> FindLeftovers(const std::vector<ProcessId>& remembered, const std::set<int>& ports,
                                               uid_t uid) {
  // The usual end of a step leaves nothing: no remembered process runs and
  // every port binds. That is known in microseconds; the full look (a /proc
  // pass, and /proc/net/tcp, which lists every TIME_WAIT socket of the
  // node: ~6 ms for 1,800) is paid only when something is left.
  BindProber prober;
  const bool running = std::any_of(remembered.begin(), remembered.end(), [](const ProcessId& id) {
    return id.pid != ::getpid() && IsRunning(id);
  });
  const bool bound = std::any_of(ports.begin(), ports.end(), [&](int p) { return !prober.IsFree(p); });
  if (!running && !bound) return std::vector<ProcessInfo>{};
  Result<std::vector<OwnedProcess>> table = ListOwnedProcesses();
  if (!table) return table.error();
  return Leftovers(table.value(), remembered, ListenersOn(table.value(), ports, uid), uid, ::getpid());
}

}  // namespace ix
