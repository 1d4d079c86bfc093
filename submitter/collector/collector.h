// Collector: the HTTP server node agents send events and result files to
// (docs/COLLECTOR.md), embeddable: `ixsubmit serve` runs one in the
// foreground, and a sweep can run one in-process and follow what arrives
// through the callbacks.
//
//   POST /v1/events                     a batch of events (JSON array)
//   PUT  /v1/results/SWEEP/ENTRY/NAME   one result file, X-Content-SHA256
//   GET  /v1/health                     200 (no token; for readiness probes)
//
// Every request but health carries `Authorization: Bearer TOKEN`. A request
// is checked from its head (RequestGate) before its body is read, then its
// body (event_validation) before anything is stored (CollectorStore): one
// transaction per request, all or nothing, idempotent by event id.
//
// Threads: one accepts, `threads` serve connections (a bounded queue
// between them); the store is one SQLite connection under a mutex.
// Callbacks run on the serving threads after the commit, one at a time, in
// commit order, and never after Stop() has returned; keep them short.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "core/base/result.h"
#include "submitter/collector/collector_store.h"

namespace ix {

struct CollectorOptions {
  std::string host = "127.0.0.1";  // an address or name of this host; "0.0.0.0" / "::" for all
  int port = 0;                    // 0: the kernel picks a free one (port() says which)
  std::string db_path;             // the sweep database (CollectorStore::Open)
  std::string token;               // the bearer token (CheckToken's rule)
  size_t threads = 8;              // connections served at once
  std::chrono::seconds read_timeout{10};
  std::chrono::seconds keep_alive_timeout{2};
  std::chrono::milliseconds stop_deadline{3000};
  // Each newly stored event (not a duplicate), after its request committed.
  std::function<void(const StoredEvent&)> on_event;
  // Each result file stored or replaced (not an unchanged repeat).
  std::function<void(const std::string& sweep, int64_t entry, const std::string& name, const std::string& content)>
      on_result;
  // One line per refused or failed request ("401 POST /v1/events from
  // ADDR: {...}"); never holds the token.
  std::function<void(const std::string& line)> log;
};

class Collector {
 public:
  // Opens the store, binds and listens, and starts serving; returns once
  // connections are accepted. Errors name the option or the address.
  static Result<std::unique_ptr<Collector>> Start(CollectorOptions options);

  ~Collector();  // Stop()
  Collector(const Collector&) = delete;
  Collector& operator=(const Collector&) = delete;

  // The port listened on (the chosen one when options.port was 0).
  int port() const;
  const std::string& host() const;

  // Stops accepting, lets requests in flight finish and waits for the
  // serving threads up to options.stop_deadline; past it, returns anyway
  // (the stragglers finish on their own; no callback runs after Stop
  // returns). Safe to call twice.
  void Stop();

  struct State;  // collector.cc

 private:
  explicit Collector(std::shared_ptr<State> state, std::thread listener);

  std::shared_ptr<State> state_;
  std::thread listener_;
  bool stopped_ = false;
};

}  // namespace ix
