#include "core/node/ports.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

namespace ix {
namespace {

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

bool ParseInt(std::string_view s, int& out) {
  if (s.empty() || s.size() > 9) return false;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  out = v;
  return true;
}

// Closes a descriptor when it goes out of scope.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

bool CanBind(int family, const char* addr, int port) {
  Fd s(::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (s.fd < 0) return family == AF_INET6;  // no IPv6 here: nothing to collide with
  int one = 1;
  ::setsockopt(s.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (family == AF_INET) {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(port));
    ::inet_pton(AF_INET, addr, &sa.sin_addr);
    return ::bind(s.fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
  }
  ::setsockopt(s.fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  sockaddr_in6 sa{};
  sa.sin6_family = AF_INET6;
  sa.sin6_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET6, addr, &sa.sin6_addr);
  if (::bind(s.fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0) return true;
  // An address family configured off (EADDRNOTAVAIL for ::1) is not a collision.
  return errno == EADDRNOTAVAIL || errno == EAFNOSUPPORT;
}

std::string FormatLease(const PortLease& l) {
  std::ostringstream o;
  o << l.first << ' ' << l.count << ' ' << l.name << ' ' << l.owner.id << ' ' << l.owner.pid << ' '
    << l.owner.start_time << ' ' << l.owner.boot_id << ' ' << l.owner.time << '\n';
  return o.str();
}

Result<std::vector<PortLease>> ReadTable(const std::string& path) {
  std::vector<PortLease> table;
  std::ifstream in(path);
  if (!in) {
    if (errno == ENOENT) return table;
    return Error{Errno("cannot read lease table " + path)};
  }
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty()) continue;
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

Status WriteTable(const std::string& dir, const std::vector<PortLease>& table) {
  const std::string tmp = dir + "/leases.tmp";
  std::string text;
  for (const auto& l : table) text += FormatLease(l);
  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (fd.fd < 0) return Error{Errno("cannot write " + tmp)};
  ::fchmod(fd.fd, 0600);
  size_t off = 0;
  while (off < text.size()) {
    const ssize_t n = ::write(fd.fd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error{Errno("cannot write " + tmp)};
    off += static_cast<size_t>(n);
  }
  if (::fsync(fd.fd) != 0) return Error{Errno("cannot fsync " + tmp)};
  if (::rename(tmp.c_str(), (dir + "/leases").c_str()) != 0) {
    return Error{Errno("cannot replace " + dir + "/leases")};
  }
  return Ok{};
}

// Who holds an flock on the file with inode `ino`: "pid 12 (comm)", from
// /proc/locks; "" when it cannot be told.
std::string LockHolder(ino_t ino) {
  std::ifstream locks("/proc/locks");
  std::string line;
  while (std::getline(locks, line)) {
    // "1: FLOCK  ADVISORY  WRITE 1234 08:02:131090 0 EOF"
    std::istringstream in(line);
    std::string n, kind, mode, rw, dev;
    long pid = 0;
    if (!(in >> n >> kind >> mode >> rw >> pid >> dev) || kind != "FLOCK") continue;
    const size_t colon = dev.rfind(':');
    if (colon == std::string::npos || std::strtoull(dev.c_str() + colon + 1, nullptr, 10) != ino) continue;
    std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
    std::string name;
    std::getline(comm, name);
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

// Whether every port of a lease is free: a lease is never dropped while a
// port of it is still bound (a server that outlived its step).
bool LeaseFree(const PortLease& l, PortProber& prober) {
  for (int p = l.first; p < l.first + l.count; ++p) {
    if (!prober.IsFree(p)) return false;
  }
  return true;
}

// Runs `fn` on the lease table with the directory's lock held; the table is
// written back (atomically, by rename) when `fn` reports a change. Dead
// owners' leases are dropped first, those whose ports are free.
template <class T, class Fn>
Result<T> Transact(const std::string& dir, OwnerLiveness& liveness, PortProber& prober,
                   std::chrono::milliseconds lock_timeout, Fn&& fn) {
  const std::string lock_path = dir + "/lock";
  Fd lock(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (lock.fd < 0) return Error{Errno("cannot open lock " + lock_path)};
  ::fchmod(lock.fd, 0600);  // a lock file of an older version was 0644
  if (Status l = LockWithDeadline(lock.fd, lock_path, lock_timeout); !l) return l.error();
  Result<std::vector<PortLease>> table = ReadTable(dir + "/leases");
  if (!table) return table.error();
  std::vector<PortLease>& t = table.value();
  const size_t before = t.size();
  t.erase(std::remove_if(t.begin(), t.end(),
                         [&](const PortLease& l) { return !liveness.IsAlive(l.owner) && LeaseFree(l, prober); }),
          t.end());
  bool changed = t.size() != before;
  Result<T> r = fn(t, changed);
  if (r && changed) {
    if (Status s = WriteTable(dir, t); !s) return s.error();
  }
  return r;  // the lock goes with `lock`
}

std::string Holders(const std::vector<PortLease>& table) {
  std::map<std::string, std::pair<pid_t, int>> by_owner;
  for (const auto& l : table) {
    auto& e = by_owner[l.owner.id];
    e.first = l.owner.pid;
    e.second += l.count;
  }
  std::vector<std::pair<std::string, std::pair<pid_t, int>>> v(by_owner.begin(), by_owner.end());
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second.second > b.second.second; });
  std::string s;
  size_t shown = 0;
  for (const auto& [id, e] : v) {
    if (shown++ == 8) {
      s += ", and " + std::to_string(v.size() - 8) + " more";
      break;
    }
    s += (s.empty() ? "" : ", ") + id + " (pid " + std::to_string(e.first) + "): " +
         std::to_string(e.second) + (e.second == 1 ? " port" : " ports");
  }
  return s.empty() ? "nobody" : s;
}

}  // namespace

bool IsLeaseToken(std::string_view s) {
  return !s.empty() && s.size() <= 128 && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '.' || c == '_' || c == ':' || c == '@' || c == '-';
  });
}

Result<PortRange> ParsePortRange(std::string_view text) {
  const size_t dash = text.find('-');
  PortRange r;
  if (dash == std::string_view::npos || !ParseInt(text.substr(0, dash), r.lo) ||
      !ParseInt(text.substr(dash + 1), r.hi)) {
    return Error{"port range '" + std::string(text) + "': expected LO-HI, e.g. 20000-29999"};
  }
  if (r.lo < 1 || r.hi > 65535) {
    return Error{"port range '" + std::string(text) + "': ports must be within 1-65535"};
  }
  if (r.lo > r.hi) {
    return Error{"port range '" + std::string(text) + "': reversed (" + std::to_string(r.lo) +
                 " > " + std::to_string(r.hi) + ")"};
  }
  return r;
}

Result<std::vector<int>> ParsePortList(std::string_view text, size_t max_ports) {
  std::vector<int> ports;
  if (text.size() > 4096) return Error{"port list: longer than 4096 characters"};
  size_t pos = 0;
  while (pos <= text.size() && !text.empty()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string_view item = text.substr(pos, comma - pos);
    int single = 0;
    if (ParseInt(item, single) && single >= 1 && single <= 65535) {
      ports.push_back(single);
    } else {
      Result<PortRange> r = ParsePortRange(item);
      if (!r) return Error{"port list '" + std::string(text) + "': " + r.error().message};
      if (ports.size() + static_cast<size_t>(r.value().size()) > max_ports) {
        return Error{"port list '" + std::string(text.substr(0, 64)) + "': more than " + std::to_string(max_ports) +
                     " ports"};
      }
      for (int p = r.value().lo; p <= r.value().hi; ++p) ports.push_back(p);
    }
    if (ports.size() > max_ports) {
      return Error{"port list '" + std::string(text.substr(0, 64)) + "': more than " + std::to_string(max_ports) + " ports"};
    }
    pos = comma + 1;
  }
  return ports;
}

bool BindProber::IsFree(int port) {
  return CanBind(AF_INET, "0.0.0.0", port) && CanBind(AF_INET, "127.0.0.1", port) &&
         CanBind(AF_INET6, "::", port) && CanBind(AF_INET6, "::1", port);
}

std::string CurrentBootId() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  in >> id;
  return id.empty() ? "unknown-boot" : id;
}

uint64_t ProcessStartTime(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return 0;
  // The command name (field 2) may hold spaces and parentheses: skip to
  // the last ')', then field 22 is the 20th after it.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream f(stat.substr(close + 2));
  std::string field;
  for (int i = 3; i <= 22; ++i) {
    if (!(f >> field)) return 0;
    // Field 3, the state: a zombie keeps its pid and start time (and
    // kill(pid, 0) succeeds) until its parent reaps it, which can take
    // long (a slurmstepd killed under an init that reaps late).
    if (i == 3 && (field == "Z" || field == "X")) return 0;
  }
  return std::strtoull(field.c_str(), nullptr, 10);
}

LeaseOwner MakeOwner(const std::string& id, pid_t pid) {
  return LeaseOwner{id, pid, ProcessStartTime(pid), CurrentBootId(),
                    static_cast<int64_t>(std::time(nullptr))};
}

bool ProcessLiveness::IsAlive(const LeaseOwner& owner) {
  static const std::string boot = CurrentBootId();
  if (owner.boot_id != boot || owner.pid <= 0) return false;
  if (::kill(owner.pid, 0) != 0 && errno != EPERM) return false;
  const uint64_t start = ProcessStartTime(owner.pid);
  // A zombie or vanished process reads as 0; a recycled pid has a new start.
  // An owner recorded without a start time is not trusted with its pid.
  return start != 0 && start == owner.start_time;
}

Result<PortBroker> PortBroker::Open(const PortBrokerConfig& config, PortProber& prober,
                                    OwnerLiveness& liveness) {
  const PortRange& r = config.range;
  if (r.lo < 1 || r.hi > 65535 || r.lo > r.hi) {
    return Error{"port range " + r.ToString() + ": must be LO-HI within 1-65535 with LO <= HI"};
  }
  if (!config.ephemeral_range_file.empty()) {
    std::ifstream in(config.ephemeral_range_file);
    int elo = 0, ehi = 0;
    if (!(in >> elo >> ehi)) {
      return Error{"cannot read the kernel's ephemeral port range from " + config.ephemeral_range_file};
    }
    if (r.lo <= ehi && elo <= r.hi) {
      return Error{"port range " + r.ToString() + " overlaps the kernel's ephemeral range " +
                   std::to_string(elo) + "-" + std::to_string(ehi) + " (" +
                   config.ephemeral_range_file +
                   "): outgoing connections could take those ports; choose a range outside it"};
    }
  }
  const std::string& dir = config.lease_dir;
  if (dir.empty() || dir[0] != '/') return Error{"lease dir '" + dir + "': must be an absolute path"};
  // Create missing parents 0755 and the directory itself 0700: no one
  // else may read the table or open (and flock) the lock.
  for (size_t slash = dir.find('/', 1);; slash = dir.find('/', slash + 1)) {
    const std::string part = dir.substr(0, slash);
    if (::mkdir(part.c_str(), slash == std::string::npos ? 0700 : 0755) != 0 && errno != EEXIST) {
      return Error{Errno("lease dir " + dir + ": cannot create " + part)};
    }
    if (slash == std::string::npos) break;
  }
  struct stat st{};
  if (::stat(dir.c_str(), &st) != 0) return Error{Errno("lease dir " + dir)};
  if (!S_ISDIR(st.st_mode)) return Error{"lease dir " + dir + ": not a directory"};
  if (st.st_uid != ::geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH))) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", st.st_mode & 07777);
    return Error{"lease dir " + dir + ": owned by uid " + std::to_string(st.st_uid) + " with mode " +
                 mode + "; it must be owned by uid " + std::to_string(::geteuid()) +
                 " and not writable by group or others"};
  }
  if (::access(dir.c_str(), R_OK | W_OK | X_OK) != 0) return Error{Errno("lease dir " + dir)};
  // One made by an older version was 0755: ours, so it is closed now.
  if ((st.st_mode & 077) != 0 && ::chmod(dir.c_str(), 0700) != 0) return Error{Errno("lease dir " + dir + ": chmod 0700")};
  return PortBroker(config, prober, liveness);
}

Result<std::vector<PortLease>> PortBroker::Lease(const LeaseOwner& owner,
                                                 const std::vector<PortWant>& wants,
                                                 const std::vector<int>& reserved) {
  if (!IsLeaseToken(owner.id)) {
    return Error{"lease owner '" + owner.id + "': use letters, digits and . _ : @ -"};
  }
  if (wants.empty()) return Error{"no ports asked for"};
  int total = 0;
  std::set<std::string> names;
  for (const auto& w : wants) {
    if (!IsLeaseToken(w.name)) return Error{"port name '" + w.name + "': use letters, digits and . _ : @ -"};
    if (!names.insert(w.name).second) return Error{"port name '" + w.name + "' asked for twice"};
    if (w.count < 1 || w.count > config_.range.size()) {
      return Error{"port block '" + w.name + "' of " + std::to_string(w.count) +
                   ": size must be 1 to " + std::to_string(config_.range.size())};
    }
    total += w.count;
  }
  return Transact<std::vector<PortLease>>(
      config_.lease_dir, *liveness_, *prober_, config_.lock_timeout,
      [&](std::vector<PortLease>& table, bool& changed) -> Result<std::vector<PortLease>> {
        for (const auto& l : table) {
          if (l.owner.id == owner.id) {
            return Error{"owner " + owner.id + " already holds leases; release them first"};
          }
        }
        std::set<int> taken;
        int leased = 0;
        for (const auto& l : table) {
          for (int p = l.first; p < l.first + l.count; ++p) taken.insert(p);
          leased += l.count;
        }
        int busy = 0;
        std::set<int> probed_busy;
        auto usable = [&](int p) {
          if (taken.count(p) || probed_busy.count(p)) return false;
          if (prober_->IsFree(p)) return true;
          probed_busy.insert(p);
          ++busy;
          return false;
        };
        // Candidate starts: Slurm's reserved ports first, then the range.
        // Reserved ports count only inside the range: SLURM_STEP_RESV_PORTS
        // comes from the job's environment, which its user can set, so it
        // must not take root past the range's checks (ephemeral range).
        std::vector<int> order;
        for (int p : reserved) {
          if (p >= config_.range.lo && p <= config_.range.hi) order.push_back(p);
        }
        std::set<int> reserved_set(order.begin(), order.end());
        for (int p = config_.range.lo; p <= config_.range.hi; ++p) {
          if (!reserved_set.count(p)) order.push_back(p);
        }
        std::vector<PortLease> got;
        for (const PortWant& w : wants) {
          bool found = false;
          for (int start : order) {
            const bool in_range = start >= config_.range.lo && start + w.count - 1 <= config_.range.hi;
            bool run_reserved = reserved_set.count(start) > 0;
            for (int p = start; run_reserved && p < start + w.count; ++p) run_reserved = reserved_set.count(p) > 0;
            if (!in_range && !run_reserved) continue;
            bool ok = true;
            for (int p = start; ok && p < start + w.count; ++p) ok = usable(p);
            if (!ok) continue;
            for (int p = start; p < start + w.count; ++p) taken.insert(p);
            got.push_back(PortLease{w.name, start, w.count, owner});
            found = true;
            break;
          }
          if (!found) {
            std::string asked;
            for (const auto& x : wants) {
              asked += (asked.empty() ? "" : ", ") + x.name + (x.count > 1 ? "[" + std::to_string(x.count) + "]" : "");
            }
            return Error{"no free " +
                         (w.count > 1 ? "block of " + std::to_string(w.count) + " ports" : std::string("port")) +
                         " for '" + w.name + "' in " + config_.range.ToString() + " for " + owner.id +
                         ": asked for " + std::to_string(total) + " port(s) (" + asked + "); " +
                         std::to_string(leased) +
                         " leased, held by " + Holders(table) + "; " + std::to_string(busy) +
                         " in use by processes outside the broker"};
          }
        }
        table.insert(table.end(), got.begin(), got.end());
        changed = true;
        return got;
      });
}

Result<int> PortBroker::Release(const std::string& id, std::vector<PortLease>* kept) {
  return ReleaseWhere([&](const LeaseOwner& o) { return o.id == id; }, kept);
}

Result<int> PortBroker::ReleaseHeldBy(const LeaseOwner& h, std::vector<PortLease>* kept) {
  return ReleaseWhere(
      [&](const LeaseOwner& o) {
        return o.id == h.id && o.pid == h.pid && o.start_time == h.start_time && o.boot_id == h.boot_id;
      },
      kept);
}

Result<int> PortBroker::ReleaseWhere(const std::function<bool(const LeaseOwner&)>& mine,
                                     std::vector<PortLease>* kept) {
  return Transact<int>(config_.lease_dir, *liveness_, *prober_, config_.lock_timeout,
                       [&](std::vector<PortLease>& table, bool& changed) -> Result<int> {
                         const size_t before = table.size();
                         table.erase(std::remove_if(table.begin(), table.end(),
                                                    [&](const PortLease& l) {
                                                      if (!mine(l.owner)) return false;
                                                      if (LeaseFree(l, *prober_)) return true;
                                                      if (kept) kept->push_back(l);
                                                      return false;
                                                    }),
                                     table.end());
                         const int n = static_cast<int>(before - table.size());
                         changed = changed || n > 0;
                         return n;
                       });
}

Result<std::vector<PortLease>> PortBroker::List() {
  return Transact<std::vector<PortLease>>(
      config_.lease_dir, *liveness_, *prober_, config_.lock_timeout,
      [](std::vector<PortLease>& table, bool&) -> Result<std::vector<PortLease>> { return table; });
}

}  // namespace ix
