// Fake `vllm-router` (vllm-router 0.1.14's command line): proxies /v1/* to
// the worker URLs, choosing a (worker, data-parallel rank) target by a
// consistent hash of X-Session-ID, adds X-data-parallel-rank when
// --intra-node-data-parallel-size > 1, streams SSE responses through, and
// serves /health on its port and Prometheus /metrics on --prometheus-port;
// FAKE_ROUTER_STALL_AFTER_S makes it stop forwarding, FAKE_ROUTER_EXIT_AFTER_S
// exit. The command line is router_args.h, the counters router_metrics.h; this
// file is the proxy. Documentation: tests/fakes/README.md.
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <pthread.h>
#include <strings.h>
#include <unistd.h>

#include "fake_common.h"
#include "growing_pool.h"
#include "router_args.h"
#include "router_metrics.h"

namespace {

using ixfake::logf;
using ixfake::now_s;
using ixfake::strprintf;
using namespace ixfake::router;

// cpp-httplib holds a thread per open connection (kept alive between
// requests too): a client at concurrency C holds C of them while streaming,
// and /health must still find one (the step's probe gives it 250 ms). The
// pool grows only when a request finds no idle worker.
constexpr std::size_t kServerThreads = 1024;

// Upstream request state shared between the handler thread (which writes the
// downstream response) and the thread that reads the worker's response.
struct Upstream {
  std::mutex m;
  std::condition_variable cv;
  bool have_headers = false;
  int status = 0;
  httplib::Headers headers;
  std::deque<std::string> chunks;
  bool done = false;
  bool failed = false;
  std::string error;
  std::atomic<bool> cancelled{false};
};

bool hop_by_hop(const std::string& name) {
  static const char* const kNames[] = {"host", "content-length", "connection", "transfer-encoding", "keep-alive",
                                       "accept-encoding", "content-encoding", "te", "upgrade", "proxy-connection",
                                       "content-type", "x-data-parallel-rank", "remote_addr", "remote_port",
                                       "local_addr", "local_port"};
  for (const char* n : kNames) {
    if (strcasecmp(n, name.c_str()) == 0) return true;
  }
  return false;
}

// The proxy: routes, the target choice, forwarding, and the stall.
class Router {
 public:
  explicit Router(Config cfg) : cfg_(std::move(cfg)) {
    for (const auto& t : cfg_.targets) keys_.push_back(t.key);
    ring_ = std::make_unique<ixfake::HashRing>(keys_);
  }

  const Config& cfg() const { return cfg_; }
  std::string render_metrics() { return metrics_.render(keys_); }

  // FAKE_ROUTER_STALL_AFTER_S: from now on each /v1/* request is accepted,
  // routed and then held, never forwarded (a router wedged between its
  // policy and its workers); responses already streaming go on.
  void stall() {
    logf("fault FAKE_ROUTER_STALL_AFTER_S: the router stops forwarding; requests are held (counted in "
         "vllm_router_running_requests), /health keeps answering");
    stalled_.store(true);
  }

  void install(httplib::Server& svr) {
    svr.set_logger([](const httplib::Request& req, const httplib::Response& res) {
      std::string worker = res.get_header_value("X-Router-Worker");
      std::string session = req.get_header_value("X-Session-ID");
      logf("%s:%d \"%s %s\" %d%s%s%s%s", req.remote_addr.c_str(), req.remote_port, req.method.c_str(),
           req.path.c_str(), res.status, worker.empty() ? "" : " -> ", worker.c_str(),
           session.empty() ? "" : " session=", session.c_str());
    });
    svr.Get("/health", [](const httplib::Request&, httplib::Response& res) { res.status = 200; });
    svr.Get("/liveness", [](const httplib::Request&, httplib::Response& res) { res.status = 200; });
    svr.Get("/readiness", [this](const httplib::Request&, httplib::Response& res) {
      res.status = cfg_.targets.empty() ? 503 : 200;
    });
    auto proxy = [this](const httplib::Request& req, httplib::Response& res) { forward(req, res); };
    svr.Get(R"(/v1/.*)", proxy);
    svr.Post(R"(/v1/.*)", proxy);
    svr.Put(R"(/v1/.*)", proxy);
    svr.Delete(R"(/v1/.*)", proxy);
  }

 private:
  static void json_error(httplib::Response& res, int status, const std::string& message) {
    std::string escaped;
    for (char c : message) {
      if (c == '"' || c == '\\') escaped += '\\';
      escaped += c;
    }
    res.status = status;
    res.set_content("{\"error\":{\"message\":\"" + escaped + "\",\"code\":" + std::to_string(status) + "}}",
                    "application/json");
  }

  const Target& choose(const httplib::Request& req) {
    std::string session = req.get_header_value("X-Session-ID");
    if (!session.empty()) return cfg_.targets[ring_->lookup(session)];
    return cfg_.targets[round_robin_.fetch_add(1) % cfg_.targets.size()];
  }

  // The request as it goes to `target`: the path under the worker's base,
  // the headers less hop-by-hop ones (X-data-parallel-rank set from the
  // target), the body; the worker's answer goes into `up` as it arrives.
  static httplib::Request upstream_request(const httplib::Request& req, const Target& target,
                                           const std::shared_ptr<Upstream>& up) {
    httplib::Request out;
    out.method = req.method;
    out.path = target.url.base_path + req.target;
    for (const auto& [k, v] : req.headers) {
      if (!hop_by_hop(k)) out.headers.emplace(k, v);
    }
    if (target.rank) out.headers.emplace("X-data-parallel-rank", std::to_string(*target.rank));
    if (req.has_header("Content-Type")) out.headers.emplace("Content-Type", req.get_header_value("Content-Type"));
    out.body = req.body;
    out.response_handler = [up](const httplib::Response& r) {
      std::lock_guard<std::mutex> lock(up->m);
      up->status = r.status;
      up->headers = r.headers;
      up->have_headers = true;
      up->cv.notify_all();
      return !up->cancelled.load();
    };
    out.content_receiver = [up](const char* data, std::size_t len, std::uint64_t, std::uint64_t) {
      std::lock_guard<std::mutex> lock(up->m);
      up->chunks.emplace_back(data, len);
      up->cv.notify_all();
      return !up->cancelled.load();
    };
    return out;
  }

  // Sends `out` to the worker in a thread of its own, which marks `up` done
  // (failed with the client's error when the request failed).
  static void send_upstream(const std::shared_ptr<Upstream>& up, const ixfake::HttpUrl& url, int timeout,
                            httplib::Request out) {
    std::thread([up, url, timeout, out = std::move(out)]() mutable {
      httplib::Client cli(url.host, url.port);
      cli.set_connection_timeout(10, 0);
      cli.set_read_timeout(timeout, 0);
      cli.set_write_timeout(timeout, 0);
      cli.set_keep_alive(false);
      cli.set_tcp_nodelay(true);
      httplib::Response r;
      httplib::Error err = httplib::Error::Success;
      bool ok = cli.send(out, r, err);
      std::lock_guard<std::mutex> lock(up->m);
      if (!ok) {
        up->failed = true;
        up->error = httplib::to_string(err);
      }
      up->done = true;
      up->cv.notify_all();
    }).detach();
  }

  // Passes the worker's body on as it arrives; false (cutting the client's
  // stream) when the client is gone or the worker broke off.
  static bool relay_body(const std::shared_ptr<Upstream>& up, httplib::DataSink& sink) {
    for (;;) {
      std::unique_lock<std::mutex> l(up->m);
      up->cv.wait(l, [&] { return !up->chunks.empty() || up->done; });
      if (!up->chunks.empty()) {
        std::string chunk = std::move(up->chunks.front());
        up->chunks.pop_front();
        l.unlock();
        if (!sink.write(chunk.data(), chunk.size())) {
          up->cancelled.store(true);
          return false;
        }
        continue;
      }
      if (up->failed) return false;  // the worker broke off: so does the client's stream
      l.unlock();
      sink.done();
      return true;
    }
  }

  void forward(const httplib::Request& req, httplib::Response& res) {
    double t0 = now_s();
    metrics_.request(req.path);
    if (cfg_.targets.empty()) {
      metrics_.error(req.path, "no_workers");
      json_error(res, 503, "No available workers");
      return;
    }
    const Target& target = choose(req);
    metrics_.routed(target.key);
    auto running = std::make_shared<RunningRequest>(metrics_, target.key);
    if (stalled_.load()) {
      logf("stall (FAKE_ROUTER_STALL_AFTER_S): holding %s %s for %s forever", req.method.c_str(), req.path.c_str(),
           target.key.c_str());
      for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
    }
    res.set_header("X-Router-Worker", target.key);

    auto up = std::make_shared<Upstream>();
    send_upstream(up, target.url, cfg_.request_timeout_s, upstream_request(req, target, up));

    // The worker's status and headers (less hop-by-hop ones) once they came.
    std::unique_lock<std::mutex> lock(up->m);
    up->cv.wait(lock, [&] { return up->have_headers || up->done; });
    if (!up->have_headers) {
      std::string why = up->error.empty() ? "no response" : up->error;
      lock.unlock();
      metrics_.error(req.path, "request_failed");
      logf("worker %s failed: %s", target.key.c_str(), why.c_str());
      json_error(res, 502, "Failed to send request to worker " + target.key + ": " + why);
      return;
    }
    res.status = up->status;
    std::string content_type = "application/octet-stream";
    for (const auto& [k, v] : up->headers) {
      if (strcasecmp(k.c_str(), "Content-Type") == 0) {
        content_type = v;
      } else if (!hop_by_hop(k)) {
        res.headers.emplace(k, v);
      }
    }
    lock.unlock();
    if (up->status >= 400) metrics_.error(req.path, strprintf("http_%d", up->status));
    std::string route = req.path;
    Metrics* metrics = &metrics_;
    // The releaser keeps `running` until the client's response is over.
    res.set_chunked_content_provider(
        content_type, [up](std::size_t, httplib::DataSink& sink) { return relay_body(up, sink); },
        [up, metrics, route, t0, running](bool) {
          up->cancelled.store(true);
          metrics->duration(route, now_s() - t0);
        });
  }

  Config cfg_;
  std::vector<std::string> keys_;  // the targets' keys, in order
  std::unique_ptr<ixfake::HashRing> ring_;
  std::atomic<bool> stalled_{false};
  std::atomic<std::size_t> round_robin_{0};
  Metrics metrics_;
};

// Runs `fire` `seconds` from now in a thread of its own (the timed faults).
void after(double seconds, std::function<void()> fire) {
  std::thread([seconds, fire = std::move(fire)] {
    ixfake::sleep_s(seconds);
    fire();
  }).detach();
}

void signal_loop() {
  sigset_t set = ixfake::handled_signals();
  for (;;) {
    int sig = 0;
    if (sigwait(&set, &sig) != 0) continue;
    if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP) {
      logf("received %s, shutting down", strsignal(sig));
      _exit(0);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  ixfake::start_program("vllm-router");
  Config cfg = parse_config(argc, argv);
  sigset_t set = ixfake::handled_signals();
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread(signal_loop).detach();

  std::string targets;
  for (const auto& t : cfg.targets) targets += (targets.empty() ? "" : ", ") + t.key;
  logf("vllm-router %s (fake): policy consistent_hash on X-Session-ID, %zu targets [%s]", kVersion,
       cfg.targets.size(), targets.c_str());
  if (cfg.start_delay_s > 0) {
    logf("FAKE_ROUTER_START_DELAY_S: waiting %.3f s before listening", cfg.start_delay_s);
    ixfake::sleep_s(cfg.start_delay_s);
  }

  Router router(cfg);
  httplib::Server svr;
  svr.new_task_queue = [] { return new ixfake::GrowingPool(kServerThreads); };
  svr.set_keep_alive_max_count(1000);
  svr.set_tcp_nodelay(true);
  int listen_fd = -1;
  svr.set_socket_options([&listen_fd](int fd) {
    ixfake::server_socket_options(fd);
    listen_fd = fd;
  });
  svr.set_read_timeout(cfg.request_timeout_s, 0);
  svr.set_write_timeout(cfg.request_timeout_s, 0);
  router.install(svr);

  httplib::Server prom;
  prom.new_task_queue = [] { return new httplib::ThreadPool(4); };
  prom.set_socket_options(ixfake::server_socket_options);
  prom.Get("/metrics", [&router](const httplib::Request&, httplib::Response& res) {
    res.set_content(router.render_metrics(), "text/plain; version=0.0.4; charset=utf-8");
  });

  int port = cfg.port;
  bool bound = port == 0 ? (port = svr.bind_to_any_port(cfg.host)) > 0 : svr.bind_to_port(cfg.host, port);
  if (!bound) {
    std::fprintf(stderr, "error: failed to bind %s:%d (address in use?)\n", cfg.host.c_str(), cfg.port);
    logf("ERROR: failed to bind %s:%d", cfg.host.c_str(), cfg.port);
    return 1;
  }
  ixfake::raise_listen_backlog(listen_fd);
  int prom_port = cfg.prometheus_port;
  bool prom_bound = prom_port == 0 ? (prom_port = prom.bind_to_any_port(cfg.prometheus_host)) > 0
                                   : prom.bind_to_port(cfg.prometheus_host, prom_port);
  if (!prom_bound) {
    std::fprintf(stderr, "error: failed to bind the Prometheus exporter on %s:%d (address in use?)\n",
                 cfg.prometheus_host.c_str(), cfg.prometheus_port);
    logf("ERROR: failed to bind the Prometheus exporter on %s:%d", cfg.prometheus_host.c_str(),
         cfg.prometheus_port);
    return 1;
  }
  std::thread([&prom] { prom.listen_after_bind(); }).detach();
  logf("Prometheus exporter listening on http://%s:%d/metrics", cfg.prometheus_host.c_str(), prom_port);
  logf("router listening on http://%s:%d", cfg.host.c_str(), port);
  if (cfg.exit_after_s) {
    after(*cfg.exit_after_s, [] {
      logf("fault FAKE_ROUTER_EXIT_AFTER_S: exiting with status 1");
      _exit(1);
    });
  }
  if (cfg.stall_after_s) after(*cfg.stall_after_s, [&router] { router.stall(); });
  svr.listen_after_bind();
  logf("server stopped");
  _exit(0);
}
