// SweepCollector: the sweep's own collector (submitter/collector/
// collector.h), run inside `ixsubmit sweep` while it submits and watches,
// on the sweep's database (the same SQLite file; WAL). What it stores stays
// there for `ixsubmit events`; what the driver acts on goes into the
// sweep's SweepInbox: the `entry`, `failure` and `result` events of this
// sweep as they are stored, and each result file as it arrives.
//
// On start it also hands the driver what the database already holds of the
// sweep (stored while an earlier submitter of it ran, which may have died
// before acting on it): the events go into the inbox again, and the result
// files are written into results/INDEX/ where missing.
//
// Where it listens is kept in sweep.json (stream.collector_listen, the port
// chosen at the first submit), so a --resume listens where the jobs were
// told to report.
//
// Invariants: callbacks only push into the inbox (never block on the
// driver); the inbox outlives the collector (Stop, or the destructor, ends
// every callback first).
#pragma once

#include <memory>
#include <string>

#include "core/base/result.h"
#include "submitter/sweep/stream_options.h"
#include "submitter/sweep/sweep_files.h"
#include "submitter/sweep/sweep_inbox.h"

namespace ix {

class Collector;

class SweepCollector {
 public:
  // Listens on `listen` (port 0: a free one) with `token`, stores into the
  // database at `db_path`, and feeds `inbox` with what concerns sweep `m`;
  // then replays what the database already holds of it. Errors name the
  // address or the database.
  static Result<std::unique_ptr<SweepCollector>> Start(const SweepManifest& m, const ListenAddress& listen,
                                                       const std::string& db_path, const std::string& token,
                                                       SweepInbox& inbox);
  ~SweepCollector();
  SweepCollector(const SweepCollector&) = delete;
  SweepCollector& operator=(const SweepCollector&) = delete;

  // Where it listens, with the port it got.
  ListenAddress address() const;
  // Stops serving; no callback runs after it returns. Safe twice.
  void Stop();

 private:
  SweepCollector(std::unique_ptr<Collector> c, std::string host);
  // The stored events and result files of sweep `m` (see the top).
  void Replay(const SweepManifest& m, const std::string& db_path, SweepInbox& inbox);

  std::unique_ptr<Collector> collector_;
  std::string host_;
};

}  // namespace ix
