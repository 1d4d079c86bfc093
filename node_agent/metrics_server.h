// MetricsServer: the agent's Prometheus endpoint. GET /metrics answers the
// latest published AgentMetrics as text exposition format 0.0.4
// (prometheus_text.h, Content-Type kPrometheusTextContentType); any other
// path is 404. It serves from its own threads, so a slow scraper never
// holds up the agent's poll loop, which only publishes a snapshot each
// interval (Publish, a pointer swap under a mutex; rendering happens on the
// server's side, per scrape).
//
// Before the first Publish, /metrics answers an empty text (no metrics,
// still a valid exposition).
//
// Limits (it runs as root, maybe on a routable address): no request bodies
// (payload limit 0), one request per connection, 2 s read and write
// timeouts, 2 worker threads with at most 8 connections queued; beyond
// that the accepting thread serves the connection itself, so it stops
// accepting (the kernel's backlog holds the rest) instead of queueing
// descriptors without bound. The port is bound without SO_REUSEPORT, so a
// second agent on the same port is an error, not a silent share.
//
// Threads: Start, Publish and Stop are for the owner (the poll loop);
// Publish is safe while the server threads render. Stop returns once the
// server threads are gone: at once when idle, else within the timeouts.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/base/result.h"
#include "node_agent/prometheus_text.h"

namespace ix {

// ADDR:PORT as agent.conf's metrics-listen writes it: a numeric IPv4
// address or a bracketed IPv6 one, and a port (0: any free port, for the
// tests). Invariant: `host` is numeric, without brackets.
struct ListenAddress {
  std::string host;
  uint16_t port = 0;
};
// An Error names the text and what is allowed.
Result<ListenAddress> ParseListenAddress(std::string_view listen);

class MetricsServer {
 public:
  MetricsServer();
  ~MetricsServer();  // Stop()
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // Binds `listen` (ADDR:PORT) and starts serving. An Error names the
  // address: "metrics-listen 127.0.0.1:9477: cannot listen: Address
  // already in use". At most once per server.
  Status Start(const std::string& listen);
  // The snapshot the next scrapes render.
  void Publish(AgentMetrics metrics);
  // Stops serving and joins the server's threads. Idempotent.
  void Stop();

  // The bound port (the chosen one when `listen` said port 0); 0 before
  // Start.
  uint16_t port() const;
  // GET /metrics answered so far.
  uint64_t scrapes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ix
