// Destinations: where the agent delivers what it receives, each with its
// own spool and delivery thread.
//   - the default: agent.conf's `collector` (spool SPOOL/default), for
//     events that belong to no route; none when no collector is set (such
//     events are then not spooled, only counted);
//   - a route per (job user, sweep): a job of a sweep that runs its own
//     collector (`ixsubmit sweep`) sends a `route` event with the
//     collector's URL and its token file as a descriptor; from then on that
//     user's events and results of that sweep go there (spool
//     SPOOL/routes/UID-SWEEP, with route.json and the token, 0600, beside
//     it, so a restarted agent replays every route).
// A route drained and unused for `route_idle` is removed with its spool.
//
// Invariants: a route is only ever used for its own uid's events (a job
// user cannot send another user's sweep elsewhere); directory names are
// built from a uid and a checked sweep id (IsValidSweepId) only; the spool
// root is root's and 0700 (Spool checks).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/base/result.h"
#include "node_agent/delivery.h"
#include "node_agent/spool.h"

namespace ix {

struct DestinationTotals {
  uint64_t events_delivered = 0, events_skipped = 0, results_delivered = 0, results_skipped = 0, retries = 0;
  uint64_t pending_records = 0, pending_results = 0, spool_bytes = 0;
  size_t routes = 0;
  size_t unauthorized = 0;      // destinations whose last answer was 401
  double last_success_time = 0; // the latest 2xx of any destination
  std::string last_error;
};

class Destinations {
 public:
  // `base`: delivery settings for every destination (timeouts, backoff,
  // CA file, log); its collector and token are each destination's own.
  Destinations(std::string spool_root, DeliveryOptions base, std::chrono::seconds route_idle = std::chrono::hours(1));
  ~Destinations();
  Destinations(const Destinations&) = delete;
  Destinations& operator=(const Destinations&) = delete;

  // The default destination (empty `collector`: none). Opens its spool and
  // starts its delivery.
  Status OpenDefault(const std::string& collector, const std::string& token);
  // Every route left in SPOOL/routes by an earlier run, replayed. Problems
  // with one route are returned as lines; the others still start.
  std::vector<std::string> Restore();
  // Adds or updates the route of (uid, sweep).
  Status SetRoute(uid_t uid, const std::string& sweep, const std::string& collector, const std::string& token);

  // The spool for an event or result of `uid` and `sweep` ("" = none):
  // its route, else the default, else nullptr.
  Spool* For(uid_t uid, const std::string& sweep);
  // Something was appended to `spool`: its delivery looks at once.
  void Wake(Spool* spool);
  // Removes idle, drained routes (call now and then).
  void Prune();
  DestinationTotals Totals() const;
  // Stops every delivery thread (each within `deadline`).
  void StopAll(std::chrono::milliseconds deadline);

 private:
  struct Destination {
    std::string dir;
    std::unique_ptr<Spool> spool;
    std::unique_ptr<Delivery> delivery;  // declared after spool: destroyed first
    std::chrono::steady_clock::time_point last_used;
  };
  Result<std::unique_ptr<Destination>> Start(const std::string& dir, const std::string& collector,
                                             const std::string& token);

  std::string root_;
  DeliveryOptions base_;
  std::chrono::seconds route_idle_;
  std::unique_ptr<Destination> default_;
  std::map<std::pair<uid_t, std::string>, std::unique_ptr<Destination>> routes_;
};

}  // namespace ix
