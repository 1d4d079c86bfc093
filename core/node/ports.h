// The node-wide port broker. Pyxis containers share the host network, so
// every job step on a node competes for the same ports; this hands out
// explicit, leased ports instead of ports derived by arithmetic.
//
// A step asks for named single ports and contiguous blocks and gets all or
// nothing. Every port comes from Slurm's reserved ports for the step first,
// then from the configured range (which must not overlap the kernel's
// ephemeral range), is proven free by a bind probe, and is recorded in a
// lease table in a root-owned lease directory under flock(2), so concurrent
// steps never get the same port. Leases of owners that are gone (process
// dead, or leased in another boot) are reclaimed on the next allocation,
// once their ports are free: a lease is never dropped while a port of it is
// still bound.
//
// Invariants of the lease table: no port is covered by two leases; each
// lease names its owner (id, pid, process start time, boot id, time).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"

namespace ix {

// An inclusive range of ports, 1 <= lo <= hi <= 65535.
struct PortRange {
  int lo = 20000;
  int hi = 29999;
  int size() const { return hi - lo + 1; }
  std::string ToString() const { return std::to_string(lo) + "-" + std::to_string(hi); }
};
Result<PortRange> ParsePortRange(std::string_view text);
// Slurm's SLURM_STEP_RESV_PORTS, e.g. "12000-12003,12010".
// At most `max_ports` ports (and 4096 characters): the text may come from a
// job's environment, and a range expands.
Result<std::vector<int>> ParsePortList(std::string_view text, size_t max_ports = 1024);

// Who holds a lease. `start_time` (clock ticks since boot, /proc/PID/stat
// field 22) guards against a recycled pid.
struct LeaseOwner {
  std::string id;  // the step ("JOB.STEP") or an admin-chosen name
  pid_t pid = 0;
  uint64_t start_time = 0;
  std::string boot_id;
  int64_t time = 0;  // seconds since the epoch, when leased
};

// One wanted port (count 1) or contiguous block (count K).
struct PortWant {
  std::string name;
  int count = 1;
};

// One lease: the `count` ports from `first` up, under `name`, held by `owner`.
struct PortLease {
  std::string name;
  int first = 0;
  int count = 1;
  LeaseOwner owner;
};

// Whether nothing listens on or is bound to a port. The real one binds.
class PortProber {
 public:
  virtual ~PortProber() = default;
  virtual bool IsFree(int port) = 0;
};

// Binds TCP on 0.0.0.0 and 127.0.0.1, and on :: and ::1 where IPv6 exists,
// with SO_REUSEADDR as servers do (so TIME_WAIT does not count as busy).
class BindProber : public PortProber {
 public:
  bool IsFree(int port) override;
};

// Whether a lease's owner still exists. The real one asks the kernel.
class OwnerLiveness {
 public:
  virtual ~OwnerLiveness() = default;
  virtual bool IsAlive(const LeaseOwner& owner) = 0;
};

// The real liveness: same boot, the pid exists (kill(pid, 0)) and has the
// recorded start time (so a recycled pid or a zombie is dead).
class ProcessLiveness : public OwnerLiveness {
 public:
  bool IsAlive(const LeaseOwner& owner) override;
};

// An owner record for process `pid` now: its start time (LiveStartTime; 0
// when it is gone or a zombie) and this boot's id ("unknown-boot" when
// /proc/sys/kernel/random/boot_id cannot be read).
LeaseOwner MakeOwner(const std::string& id, pid_t pid);

// Where the broker hands out ports from and keeps its table.
struct PortBrokerConfig {
  PortRange range;
  std::string lease_dir = "/run/inferencex/ports";
  std::string ephemeral_range_file = "/proc/sys/net/ipv4/ip_local_port_range";
  // How long a lease or release waits for the lease table's lock before it
  // fails, naming the holder: nobody can make a step wait for ever.
  std::chrono::milliseconds lock_timeout{10000};
};

// The broker over one lease directory; every call is one locked
// transaction on its table (see the top of this file for the invariants).
class PortBroker {
 public:
  // Checks the range against the ephemeral range and creates or checks the
  // lease directory (owned by us and not group- or world-writable; made
  // 0700, its files 0600).
  static Result<PortBroker> Open(const PortBrokerConfig& config, PortProber& prober,
                                 OwnerLiveness& liveness);

  // Leases every wanted port for `owner`, or none. `reserved` are ports
  // Slurm reserved for the step; those inside the range are tried first.
  Result<std::vector<PortLease>> Lease(const LeaseOwner& owner, const std::vector<PortWant>& wants,
                                       const std::vector<int>& reserved = {});
  // Releases every lease of owner `id` whose ports are all free; returns how
  // many it released. A lease with a port still bound (a server that
  // outlived its step) is kept, and added to `kept`: it is dropped by a
  // later Release or, once its owner is gone, by any transaction that finds
  // its ports free.
  Result<int> Release(const std::string& id, std::vector<PortLease>* kept = nullptr);
  // The same for the leases `holder` itself holds (id, pid, start time and
  // boot all equal): how a step releases, so a step refused with a colliding
  // id never takes the leases of the live step that holds that id.
  // Release(id) is the admin's (ixctl ports release).
  Result<int> ReleaseHeldBy(const LeaseOwner& holder, std::vector<PortLease>* kept = nullptr);
  // The leases now, after reclaiming those of dead owners.
  Result<std::vector<PortLease>> List();

  const PortBrokerConfig& config() const { return config_; }

 private:
  Result<int> ReleaseWhere(const std::function<bool(const LeaseOwner&)>& mine, std::vector<PortLease>* kept);
  PortBroker(PortBrokerConfig config, PortProber& prober, OwnerLiveness& liveness)
      : config_(std::move(config)), prober_(&prober), liveness_(&liveness) {}

  PortBrokerConfig config_;
  PortProber* prober_;
  OwnerLiveness* liveness_;
};

// The names a lease file accepts for owners and ports: [A-Za-z0-9._:@-]+.
bool IsLeaseToken(std::string_view s);

}  // namespace ix
