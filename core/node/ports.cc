#include "core/node/ports.h"
#include "core/node/port_table.h"

#include "core/base/dir_at.h"
#include "core/base/file_text.h"
#include "core/base/proc_fs.h"
#include "core/base/text.h"
#include "core/base/unique_fd.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <map>
#include <set>
#include <sstream>

namespace ix {
namespace {

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

// A port number's digits (at most 9, so it fits an int).
bool ParseInt(std::string_view s, int& out) {
  uint64_t v = 0;
  if (s.size() > 9 || !ParseUnsigned(s, v)) return false;
  out = static_cast<int>(v);
  return true;
}

// This boot's id for lease records; never empty, so a record always has its
// seven fields (and an unreadable id matches no boot's real one).
std::string OwnerBootId() {
  const std::string id = BootId();
  return id.empty() ? "unknown-boot" : id;
}

bool CanBind(int family, const char* addr, int port) {
  UniqueFd s(::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s.valid()) return family == AF_INET6;  // no IPv6 here: nothing to collide with
  int one = 1;
  ::setsockopt(s.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (family == AF_INET) {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(port));
    ::inet_pton(AF_INET, addr, &sa.sin_addr);
    return ::bind(s.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
  }
  ::setsockopt(s.get(), IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  sockaddr_in6 sa{};
  sa.sin6_family = AF_INET6;
  sa.sin6_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET6, addr, &sa.sin6_addr);
  if (::bind(s.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0) return true;
  // An address family configured off (EADDRNOTAVAIL for ::1) is not a collision.
  return errno == EADDRNOTAVAIL || errno == EAFNOSUPPORT;
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
  Result<UniqueFd> lock = LockLeaseTable(dir, lock_timeout);
  if (!lock) return lock.error();
  Result<std::vector<PortLease>> table = ReadLeaseTable(dir + "/leases");
  if (!table) return table.error();
  std::vector<PortLease>& t = table.value();
  const size_t before = t.size();
  t.erase(std::remove_if(t.begin(), t.end(),
                         [&](const PortLease& l) { return !liveness.IsAlive(l.owner) && LeaseFree(l, prober); }),
          t.end());
  bool changed = t.size() != before;
  Result<T> r = fn(t, changed);
  if (r && changed) {
    if (Status s = WriteLeaseTable(dir, t); !s) return s.error();
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

LeaseOwner MakeOwner(const std::string& id, pid_t pid) {
  return LeaseOwner{id, pid, LiveStartTime(pid), OwnerBootId(),
                    static_cast<int64_t>(std::time(nullptr))};
}

bool ProcessLiveness::IsAlive(const LeaseOwner& owner) {
  static const std::string boot = OwnerBootId();
  if (owner.boot_id != boot || owner.pid <= 0) return false;
  if (::kill(owner.pid, 0) != 0 && errno != EPERM) return false;
  const uint64_t start = LiveStartTime(owner.pid);
  // A zombie or vanished process reads as 0; a recycled pid has a new start.
  // An owner recorded without a start time is not trusted with its pid.
  return start != 0 && start == owner.start_time;
}

namespace {

// The range must not overlap the kernel's ephemeral ports (`file` holds
// "LO HI", as /proc/sys/net/ipv4/ip_local_port_range does): outgoing
// connections take those at random.
Status CheckOutsideEphemeral(const PortRange& r, const std::string& file) {
  int err = 0;
  std::istringstream in(ReadFileText(file, &err));
  int elo = 0, ehi = 0;
  if (err || !(in >> elo >> ehi)) return Error{"cannot read the kernel's ephemeral port range from " + file};
  if (r.lo <= ehi && elo <= r.hi) {
    return Error{"port range " + r.ToString() + " overlaps the kernel's ephemeral range " + std::to_string(elo) +
                 "-" + std::to_string(ehi) + " (" + file +
                 "): outgoing connections could take those ports; choose a range outside it"};
  }
  return Ok{};
}

// Creates the lease directory (missing parents 0755, itself 0700: no one
// else may read the table or open, and flock, the lock) or checks the one
// there: ours, not reached through a link, not writable by others.
Status PrepareLeaseDir(const std::string& dir) {
  Result<int> opened = OpenOwnedDir(dir, 0700, "lease dir");
  if (!opened) {
    struct stat st{};
    // Said in the words ixctl's users (and tests/ixctl_ports_test.sh) know.
    if (::stat(dir.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) return Error{"lease dir " + dir + ": not a directory"};
    return opened.error();
  }
  const UniqueFd fd(opened.value());
  struct stat st{};
  if (::fstat(fd.get(), &st) != 0 || ::access(dir.c_str(), R_OK | W_OK | X_OK) != 0) {
    return Error{Errno("lease dir " + dir)};
  }
  // One made by an older version was 0755: ours, so it is closed now.
  if ((st.st_mode & 077) != 0 && ::fchmod(fd.get(), 0700) != 0) return Error{Errno("lease dir " + dir + ": chmod 0700")};
  return Ok{};
}

}  // namespace

Result<PortBroker> PortBroker::Open(const PortBrokerConfig& config, PortProber& prober,
                                    OwnerLiveness& liveness) {
  const PortRange& r = config.range;
  if (r.lo < 1 || r.hi > 65535 || r.lo > r.hi) {
    return Error{"port range " + r.ToString() + ": must be LO-HI within 1-65535 with LO <= HI"};
  }
  if (!config.ephemeral_range_file.empty()) {
    if (Status s = CheckOutsideEphemeral(r, config.ephemeral_range_file); !s) return s.error();
  }
  if (Status s = PrepareLeaseDir(config.lease_dir); !s) return s.error();
  return PortBroker(config, prober, liveness);
}

namespace {

// An owner's request checked before the table is locked: valid names, each
// once, blocks that fit the range. Returns how many ports it adds up to.
Result<int> CheckRequest(const LeaseOwner& owner, const std::vector<PortWant>& wants, const PortRange& range) {
  if (!IsLeaseToken(owner.id)) {
    return Error{"lease owner '" + owner.id + "': use letters, digits and . _ : @ -"};
  }
  if (wants.empty()) return Error{"no ports asked for"};
  int total = 0;
  std::set<std::string> names;
  for (const auto& w : wants) {
    if (!IsLeaseToken(w.name)) return Error{"port name '" + w.name + "': use letters, digits and . _ : @ -"};
    if (!names.insert(w.name).second) return Error{"port name '" + w.name + "' asked for twice"};
    if (w.count < 1 || w.count > range.size()) {
      return Error{"port block '" + w.name + "' of " + std::to_string(w.count) + ": size must be 1 to " +
                   std::to_string(range.size())};
    }
    total += w.count;
  }
  return total;
}

// Picks the ports of one request against a lease table. Invariants: a port
// the table holds, or one already picked, is never picked; each port is
// probed at most once (busy() counts those found in use by others).
class PortPicker {
 public:
  PortPicker(const PortRange& range, const std::vector<int>& reserved, const std::vector<PortLease>& table,
             PortProber& prober)
      : range_(range), prober_(prober) {
    for (const auto& l : table) {
      for (int p = l.first; p < l.first + l.count; ++p) taken_.insert(p);
    }
    // Candidate starts: Slurm's reserved ports first, then the range.
    // Reserved ports count only inside the range: SLURM_STEP_RESV_PORTS
    // comes from the job's environment, which its user can set, so it must
    // not take root past the range's checks (ephemeral range).
    for (int p : reserved) {
      if (p >= range.lo && p <= range.hi) order_.push_back(p);
    }
    reserved_.insert(order_.begin(), order_.end());
    for (int p = range.lo; p <= range.hi; ++p) {
      if (!reserved_.count(p)) order_.push_back(p);
    }
  }

  // The first port of `count` contiguous usable ones, now taken; 0 when
  // there is none. A block lies in the range, or wholly in reserved ports.
  int Take(int count) {
    for (int start : order_) {
      const bool in_range = start >= range_.lo && start + count - 1 <= range_.hi;
      bool run_reserved = true;
      for (int p = start; run_reserved && p < start + count; ++p) run_reserved = reserved_.count(p) > 0;
      if (!in_range && !run_reserved) continue;
      bool ok = true;
      for (int p = start; ok && p < start + count; ++p) ok = Usable(p);
      if (!ok) continue;
      for (int p = start; p < start + count; ++p) taken_.insert(p);
      return start;
    }
    return 0;
  }

  int busy() const { return busy_; }

 private:
  bool Usable(int p) {
    if (taken_.count(p) || probed_busy_.count(p)) return false;
    if (prober_.IsFree(p)) return true;
    probed_busy_.insert(p);
    ++busy_;
    return false;
  }

  const PortRange& range_;
  PortProber& prober_;
  std::vector<int> order_;
  std::set<int> reserved_, taken_, probed_busy_;
  int busy_ = 0;
};

// Why `want` found no ports: the whole request, who holds the leased ports
// and how many were in use outside the broker.
Error NoFreePorts(const PortWant& want, const std::vector<PortWant>& wants, int total, const LeaseOwner& owner,
                  const PortRange& range, const std::vector<PortLease>& table, int busy) {
  std::string asked;
  for (const auto& x : wants) {
    asked += (asked.empty() ? "" : ", ") + x.name + (x.count > 1 ? "[" + std::to_string(x.count) + "]" : "");
  }
  int leased = 0;
  for (const auto& l : table) leased += l.count;
  return Error{"no free " +
               (want.count > 1 ? "block of " + std::to_string(want.count) + " ports" : std::string("port")) +
               " for '" + want.name + "' in " + range.ToString() + " for " + owner.id + ": asked for " +
               std::to_string(total) + " port(s) (" + asked + "); " + std::to_string(leased) + " leased, held by " +
               Holders(table) + "; " + std::to_string(busy) + " in use by processes outside the broker"};
}

}  // namespace

Result<std::vector<PortLease>> PortBroker::Lease(const LeaseOwner& owner,
                                                 const std::vector<PortWant>& wants,
                                                 const std::vector<int>& reserved) {
  Result<int> total = CheckRequest(owner, wants, config_.range);
  if (!total) return total.error();
  return Transact<std::vector<PortLease>>(
      config_.lease_dir, *liveness_, *prober_, config_.lock_timeout,
      [&](std::vector<PortLease>& table, bool& changed) -> Result<std::vector<PortLease>> {
        for (const auto& l : table) {
          if (l.owner.id == owner.id) {
            return Error{"owner " + owner.id + " already holds leases; release them first"};
          }
        }
        PortPicker picker(config_.range, reserved, table, *prober_);
        std::vector<PortLease> got;
        for (const PortWant& w : wants) {
          const int start = picker.Take(w.count);
          if (start == 0) return NoFreePorts(w, wants, total.value(), owner, config_.range, table, picker.busy());
          got.push_back(PortLease{w.name, start, w.count, owner});
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
