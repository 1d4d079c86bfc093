#include "core/node/port_table.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>
#include <thread>

#include "core/base/file_text.h"
#include "core/base/proc_fs.h"
#include "core/base/text.h"

namespace ix {
namespace {

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

std::string FormatLease(const PortLease& l) {
  std::ostringstream o;
  o << l.first << ' ' << l.count << ' ' << l.name << ' ' << l.owner.id << ' ' << l.owner.pid << ' '
    << l.owner.start_time << ' ' << l.owner.boot_id << ' ' << l.owner.time << '\n';
  return o.str();
}

// Who holds an flock on the file with inode `ino`: "pid 12 (comm)", from
// /proc/locks; "" when it cannot be told.
std::string LockHolder(ino_t ino) {
  int err = 0;
  const std::string locks = ReadFileText("/proc/locks", &err);
  for (std::string_view line : Lines(locks)) {
    // "1: FLOCK  ADVISORY  WRITE 1234 08:02:131090 0 EOF"
    std::istringstream in{std::string(line)};
    std::string n, kind, mode, rw, dev;
    long pid = 0;
    if (!(in >> n >> kind >> mode >> rw >> pid >> dev) || kind != "FLOCK") continue;
    const size_t colon = dev.rfind(':');
    if (colon == std::string::npos || std::strtoull(dev.c_str() + colon + 1, nullptr, 10) != ino) continue;
    Result<ProcessInfo> holder = ReadProcessInfo(static_cast<pid_t>(pid));
    const std::string name = holder ? holder.value().comm : "";
    return "pid " + std::to_string(pid) + (name.empty() ? "" : " (" + name + ")");
  }
  return "";
}

// flock(LOCK_EX) that gives up after `timeout`: nobody, a job user included,
// can make a step wait for ever by holding the lock.
Status LockWithDeadline(int fd, const std::string& path, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::milliseconds(1);
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK) return Error{Errno("cannot lock " + path)};
    if (std::chrono::steady_clock::now() >= deadline) {
      struct stat st{};
      const std::string holder = ::fstat(fd, &st) == 0 ? LockHolder(st.st_ino) : "";
      return Error{"cannot lock " + path + " within " + std::to_string(timeout.count()) + " ms: held by " +
                   (holder.empty() ? std::string("another process") : holder)};
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
  return Ok{};
}

}  // namespace

Result<std::vector<PortLease>> ReadLeaseTable(const std::string& path) {
  std::vector<PortLease> table;
  int err = 0;
  const std::string text = ReadFileText(path, &err);
  if (err == ENOENT) return table;
  if (err) return Error{"cannot read lease table " + path + ": " + std::strerror(err)};
  int lineno = 0;
  for (std::string_view text_line : Lines(text)) {
    ++lineno;
    if (text_line.empty()) continue;
    const std::string line(text_line);
    std::istringstream f(line);
    PortLease l;
    if (!(f >> l.first >> l.count >> l.name >> l.owner.id >> l.owner.pid >> l.owner.start_time >>
          l.owner.boot_id >> l.owner.time) ||
        l.count < 1 || l.first < 1 || l.first + l.count - 1 > 65535) {
      return Error{path + ":" + std::to_string(lineno) + ": malformed lease line '" + line +
                   "'; expected: FIRST COUNT NAME OWNER PID START_TIME BOOT_ID TIME"};
    }
    table.push_back(std::move(l));
  }
  return table;
}

Status WriteLeaseTable(const std::string& dir, const std::vector<PortLease>& table) {
  const std::string tmp = dir + "/leases.tmp";
  std::string text;
  for (const auto& l : table) text += FormatLease(l);
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd.valid()) return Error{Errno("cannot write " + tmp)};
  ::fchmod(fd.get(), 0600);
  size_t off = 0;
  while (off < text.size()) {
    const ssize_t n = ::write(fd.get(), text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error{Errno("cannot write " + tmp)};
    off += static_cast<size_t>(n);
  }
  if (::fsync(fd.get()) != 0) return Error{Errno("cannot fsync " + tmp)};
  if (::rename(tmp.c_str(), (dir + "/leases").c_str()) != 0) {
    return Error{Errno("cannot replace " + dir + "/leases")};
  }
  return Ok{};
}

Result<UniqueFd> LockLeaseTable(const std::string& dir, std::chrono::milliseconds timeout) {
  const std::string lock_path = dir + "/lock";
  UniqueFd lock(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!lock.valid()) return Error{Errno("cannot open lock " + lock_path)};
  ::fchmod(lock.get(), 0600);  // a lock file of an older version was 0644
  if (Status l = LockWithDeadline(lock.get(), lock_path, timeout); !l) return l.error();
  return lock;
}

}  // namespace ix
