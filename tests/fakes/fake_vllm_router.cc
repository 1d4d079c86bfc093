// Fake `vllm-router` (vllm-router 0.1.14's command line): proxies /v1/* to
// the worker URLs, choosing a (worker, data-parallel rank) target by a
// consistent hash of X-Session-ID, adds X-data-parallel-rank when
// --intra-node-data-parallel-size > 1, streams SSE responses through, and
// serves /health on its port and Prometheus /metrics on --prometheus-port.
// Documentation: tests/fakes/README.md.
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <pthread.h>
#include <unistd.h>

#include "fake_common.h"
#include "growing_pool.h"

namespace {

using ixfake::Arity;
using ixfake::logf;
using ixfake::now_s;
using ixfake::strprintf;

constexpr const char* kVersion = "0.1.14+fake";
constexpr std::size_t kServerThreads = 128;

const std::vector<std::string> kPolicies = {"random", "round_robin", "cache_aware", "power_of_two",
                                            "consistent_hash"};

const std::vector<ixfake::OptionSpec> kOptions = {
    {"--worker-urls", Arity::kMany, "WORKER_URLS"},
    {"--policy", Arity::kOne, "POLICY"},
    {"--intra-node-data-parallel-size", Arity::kOne, "INTRA_NODE_DATA_PARALLEL_SIZE"},
    {"--host", Arity::kOne, "HOST"},
    {"--port", Arity::kOne, "PORT"},
    {"--prometheus-host", Arity::kOne, "PROMETHEUS_HOST"},
    {"--prometheus-port", Arity::kOne, "PROMETHEUS_PORT"},
    {"--request-timeout-secs", Arity::kOne, "REQUEST_TIMEOUT_SECS"},
    {"--disable-retries", Arity::kNone, ""},
    {"--disable-circuit-breaker", Arity::kNone, ""},
    {"--log-level", Arity::kOne, "LOG_LEVEL"},
    {"--help", Arity::kNone, ""},
    {"-h", Arity::kNone, ""},
    {"--version", Arity::kNone, ""},
    {"-V", Arity::kNone, ""},
};

constexpr const char* kUsageTail =
    "\n\nUsage: vllm-router [OPTIONS]\n\nFor more information, try '--help'.\n";

[[noreturn]] void clap_error(const std::string& message) {
  std::fprintf(stderr, "%s%s", message.c_str(), kUsageTail);
  std::exit(2);
}

void print_help() {
  std::printf(
      "vllm-router %s: fake vllm-router for tests (tests/fakes/README.md)\n\n"
      "Usage: vllm-router [OPTIONS]\n\nOptions:\n"
      "      --worker-urls <WORKER_URLS>...  worker base URLs (http://host:port)\n"
      "      --policy <POLICY>               consistent_hash (the only policy of the fake)\n"
      "      --intra-node-data-parallel-size <N>  data-parallel ranks per worker URL [default: 1]\n"
      "      --host <HOST>                   [default: 127.0.0.1]\n"
      "      --port <PORT>                   [default: 30000]\n"
      "      --prometheus-host <HOST>        [default: 127.0.0.1]\n"
      "      --prometheus-port <PORT>        [default: 29000]\n"
      "      --request-timeout-secs <SECS>   [default: 1800]\n"
      "      --disable-retries\n      --disable-circuit-breaker\n      --log-level <LEVEL>\n"
      "  -h, --help\n  -V, --version\n",
      kVersion);
}

struct Target {
  std::string key;  // "http://host:port" or "http://host:port@rank"
  ixfake::HttpUrl url;
  std::optional<int> rank;
};

struct Config {
  std::vector<Target> targets;
  std::string host = "127.0.0.1";
  int port = 30000;
  std::string prometheus_host = "127.0.0.1";
  int prometheus_port = 29000;
  int request_timeout_s = 1800;
  int intra_dp = 1;
  double start_delay_s = 0;
  std::optional<double> exit_after_s;
};

int int_option(const ixfake::StrictArgs& args, const char* name, const char* value_name, long long min, long long max,
               int fallback) {
  auto v = args.value(name);
  if (!v) return fallback;
  auto n = ixfake::parse_int(*v, min, max);
  if (!n) {
    clap_error(strprintf("error: invalid value '%s' for '%s <%s>': expected an integer in %lld..=%lld", v->c_str(),
                         name, value_name, min, max));
  }
  return static_cast<int>(*n);
}

std::optional<double> env_seconds(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
  auto s = ixfake::parse_seconds(v);
  if (!s) {
    std::fprintf(stderr, "vllm-router (fake): %s='%s': expected seconds (a number >= 0)\n", name, v);
    std::exit(2);
  }
  return s;
}

Config parse_config(int argc, char** argv) {
  std::vector<std::string> raw(argv + 1, argv + argc);
  ixfake::StrictArgs args = ixfake::parse_strict(raw, kOptions);
  if (!args.ok()) clap_error(args.error);
  if (args.has("--help") || args.has("-h")) {
    print_help();
    std::exit(0);
  }
  if (args.has("--version") || args.has("-V")) {
    std::printf("vllm-router %s\n", kVersion);
    std::exit(0);
  }
  Config cfg;
  if (auto p = args.value("--policy")) {
    if (std::find(kPolicies.begin(), kPolicies.end(), *p) == kPolicies.end()) {
      clap_error("error: invalid value '" + *p +
                 "' for '--policy <POLICY>'\n  [possible values: random, round_robin, cache_aware, power_of_two, "
                 "consistent_hash]");
    }
    if (*p != "consistent_hash") {
      std::fprintf(stderr, "error: the fake vllm-router implements only --policy consistent_hash, not '%s'\n",
                   p->c_str());
      std::exit(2);
    }
  }
  cfg.intra_dp = int_option(args, "--intra-node-data-parallel-size", "INTRA_NODE_DATA_PARALLEL_SIZE", 1, 1024, 1);
  cfg.port = int_option(args, "--port", "PORT", 0, 65535, cfg.port);
  cfg.prometheus_port = int_option(args, "--prometheus-port", "PROMETHEUS_PORT", 0, 65535, cfg.prometheus_port);
  cfg.request_timeout_s = int_option(args, "--request-timeout-secs", "REQUEST_TIMEOUT_SECS", 1, 1LL << 30,
                                     cfg.request_timeout_s);
  if (auto h = args.value("--host")) cfg.host = *h;
  if (auto h = args.value("--prometheus-host")) cfg.prometheus_host = *h;
  for (const auto& u : args.values("--worker-urls")) {
    ixfake::HttpUrl url = ixfake::parse_http_url(u);
    if (!url.ok()) clap_error("error: invalid value for '--worker-urls <WORKER_URLS>...': " + url.error);
    std::string base = u;
    while (!base.empty() && base.back() == '/') base.pop_back();
    // The real router expands a worker into ranks only when the size is > 1.
    if (cfg.intra_dp > 1) {
      for (int r = 0; r < cfg.intra_dp; ++r) cfg.targets.push_back({base + "@" + std::to_string(r), url, r});
    } else {
      cfg.targets.push_back({base, url, std::nullopt});
    }
  }
  cfg.start_delay_s = env_seconds("FAKE_ROUTER_START_DELAY_S").value_or(0);
  cfg.exit_after_s = env_seconds("FAKE_ROUTER_EXIT_AFTER_S");
  return cfg;
}

// ------------------------------------------------------------------ metrics

class Metrics {
 public:
  void request(const std::string& route) {
    std::lock_guard<std::mutex> lock(m_);
    ++requests_[route];
  }
  void routed(const std::string& worker) {
    std::lock_guard<std::mutex> lock(m_);
    ++processed_[worker];
  }
  void error(const std::string& route, const std::string& type) {
    std::lock_guard<std::mutex> lock(m_);
    ++errors_[{route, type}];
  }
  void duration(const std::string& route, double seconds) {
    std::lock_guard<std::mutex> lock(m_);
    auto& h = durations_[route];
    if (h.counts.empty()) h.counts.assign(bounds().size(), 0);
    for (std::size_t i = 0; i < bounds().size(); ++i) {
      if (seconds <= bounds()[i]) ++h.counts[i];
    }
    h.sum += seconds;
    ++h.count;
  }

  std::string render(const std::vector<Target>& targets) {
    std::lock_guard<std::mutex> lock(m_);
    using ixfake::prom_escape;
    std::string out;
    out += "# HELP vllm_router_requests_total Total number of requests by route\n";
    out += "# TYPE vllm_router_requests_total counter\n";
    for (const auto& [route, n] : requests_) {
      out += strprintf("vllm_router_requests_total{route=\"%s\"} %llu\n", prom_escape(route).c_str(), n);
    }
    out += "# HELP vllm_router_processed_requests_total Requests sent to each worker\n";
    out += "# TYPE vllm_router_processed_requests_total counter\n";
    for (const auto& [worker, n] : processed_) {
      out += strprintf("vllm_router_processed_requests_total{worker=\"%s\"} %llu\n", prom_escape(worker).c_str(), n);
    }
    out += "# HELP vllm_router_policy_decisions_total Routing decisions by policy and worker\n";
    out += "# TYPE vllm_router_policy_decisions_total counter\n";
    for (const auto& [worker, n] : processed_) {
      out += strprintf("vllm_router_policy_decisions_total{policy=\"consistent_hash\",worker=\"%s\"} %llu\n",
                       prom_escape(worker).c_str(), n);
    }
    out += "# HELP vllm_router_request_errors_total Request errors by route and type\n";
    out += "# TYPE vllm_router_request_errors_total counter\n";
    for (const auto& [key, n] : errors_) {
      out += strprintf("vllm_router_request_errors_total{route=\"%s\",error_type=\"%s\"} %llu\n",
                       prom_escape(key.first).c_str(), prom_escape(key.second).c_str(), n);
    }
    out += "# HELP vllm_router_active_workers Number of active workers (worker, rank targets)\n";
    out += "# TYPE vllm_router_active_workers gauge\n";
    out += strprintf("vllm_router_active_workers %zu\n", targets.size());
    out += "# HELP vllm_router_request_duration_seconds Request duration by route\n";
    out += "# TYPE vllm_router_request_duration_seconds histogram\n";
    for (const auto& [route, h] : durations_) {
      std::string r = prom_escape(route);
      for (std::size_t i = 0; i < bounds().size(); ++i) {
        out += strprintf("vllm_router_request_duration_seconds_bucket{route=\"%s\",le=\"%g\"} %llu\n", r.c_str(),
                         bounds()[i], h.counts[i]);
      }
      out += strprintf("vllm_router_request_duration_seconds_bucket{route=\"%s\",le=\"+Inf\"} %llu\n", r.c_str(),
                       h.count);
      out += strprintf("vllm_router_request_duration_seconds_sum{route=\"%s\"} %.6f\n", r.c_str(), h.sum);
      out += strprintf("vllm_router_request_duration_seconds_count{route=\"%s\"} %llu\n", r.c_str(), h.count);
    }
    return out;
  }

 private:
  struct Hist {
    std::vector<unsigned long long> counts;
    double sum = 0;
    unsigned long long count = 0;
  };
  static const std::vector<double>& bounds() {
    static const std::vector<double> b = {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120};
    return b;
  }
  std::mutex m_;
  std::map<std::string, unsigned long long> requests_;
  std::map<std::string, unsigned long long> processed_;
  std::map<std::pair<std::string, std::string>, unsigned long long> errors_;
  std::map<std::string, Hist> durations_;
};

// ------------------------------------------------------------------- proxy

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

class Router {
 public:
  explicit Router(Config cfg) : cfg_(std::move(cfg)) {
    std::vector<std::string> keys;
    for (const auto& t : cfg_.targets) keys.push_back(t.key);
    ring_ = std::make_unique<ixfake::HashRing>(keys);
  }

  const Config& cfg() const { return cfg_; }
  Metrics& metrics() { return metrics_; }

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
    res.set_chunked_content_provider(
        content_type, [up](std::size_t, httplib::DataSink& sink) { return relay_body(up, sink); },
        [up, metrics, route, t0](bool) {
          up->cancelled.store(true);
          metrics->duration(route, now_s() - t0);
        });
  }

  Config cfg_;
  std::unique_ptr<ixfake::HashRing> ring_;
  std::atomic<std::size_t> round_robin_{0};
  Metrics metrics_;
};

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
  ::signal(SIGPIPE, SIG_IGN);
  ixfake::set_log_tag("vllm-router");
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
    res.set_content(router.metrics().render(router.cfg().targets), "text/plain; version=0.0.4; charset=utf-8");
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
    double after = *cfg.exit_after_s;
    std::thread([after] {
      ixfake::sleep_s(after);
      logf("fault FAKE_ROUTER_EXIT_AFTER_S: exiting with status 1");
      _exit(1);
    }).detach();
  }
  svr.listen_after_bind();
  logf("server stopped");
  _exit(0);
}
