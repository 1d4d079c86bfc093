#include "node_agent/metrics_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <httplib.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "core/base/http_task_queue.h"
#include "core/base/text.h"

namespace ix {
namespace {

constexpr size_t kWorkerThreads = 2;
constexpr size_t kMaxQueued = 8;
constexpr time_t kTimeoutSeconds = 2;

// httplib's task queue, bounded: `threads` workers and at most `max_queued`
// connections waiting. When full, Submit runs the job on the calling
// (accepting) thread, which then accepts nothing until it is done: the
// backlog stays in the kernel, not in this process's descriptors.
class BoundedPool final : public HttpTaskQueue {
 public:
  BoundedPool(size_t threads, size_t max_queued) : max_queued_(max_queued) {
    for (size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { Work(); });
  }
  ~BoundedPool() override { shutdown(); }

  void Submit(std::function<void()> fn) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (jobs_.size() < max_queued_) {
        jobs_.push_back(std::move(fn));
        cv_.notify_one();
        return;
      }
    }
    fn();
  }
  // Runs what is queued, then joins the workers.
  void shutdown() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      shutdown_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
  }

 private:
  void Work() {
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock<std::mutex> lock(mu_);
        // A bounded wait, looked at again: shutdown also notifies.
        while (!shutdown_ && jobs_.empty()) cv_.wait_for(lock, std::chrono::seconds(1));
        if (jobs_.empty()) return;
        fn = std::move(jobs_.front());
        jobs_.pop_front();
      }
      fn();
    }
  }

  const size_t max_queued_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;  // guarded by mu_
  bool shutdown_ = false;                   // guarded by mu_
};

// httplib's server with a look at its listening socket: stop() acts only
// once the accept loop runs, so Stop asks until the socket is closed.
class Server final : public httplib::Server {
 public:
  bool listening() const { return svr_sock_ != INVALID_SOCKET; }
};

}  // namespace

struct MetricsServer::Impl {
  Server server;
  std::thread thread;  // runs the accept loop
  std::atomic<bool> done{false};
  bool started = false;
  uint16_t port = 0;
  std::atomic<uint64_t> scrapes{0};
  std::mutex mu;
  std::shared_ptr<const AgentMetrics> latest;  // guarded by mu; null before the first Publish

  void Configure();
  std::string Render();
};

std::string MetricsServer::Impl::Render() {
  std::shared_ptr<const AgentMetrics> snapshot;
  {
    std::lock_guard<std::mutex> lock(mu);
    snapshot = latest;
  }
  return snapshot ? RenderPrometheusText(*snapshot) : std::string();
}

void MetricsServer::Impl::Configure() {
  server.new_task_queue = [] { return new BoundedPool(kWorkerThreads, kMaxQueued); };
  server.set_payload_max_length(0);
  server.set_keep_alive_max_count(1);
  server.set_read_timeout(kTimeoutSeconds, 0);
  server.set_write_timeout(kTimeoutSeconds, 0);
  // Replaces httplib's default (SO_REUSEPORT): SO_REUSEADDR only, so a
  // restart rebinds at once but a second listener fails.
  server.set_socket_options([](int sock) {
    int one = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  });
  server.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(Render(), kPrometheusTextContentType);
    ++scrapes;
  });
  server.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    const std::string text =
        res.status == 404 ? "404 page not found: only GET /metrics is served\n" : std::to_string(res.status) + "\n";
    res.set_content(text, "text/plain; charset=utf-8");
  });
}

Result<ListenAddress> ParseListenAddress(std::string_view listen) {
  const auto bad = [&](const std::string& why) {
    return Error{"metrics-listen '" + std::string(listen) + "': " + why +
                 "; expected ADDR:PORT with a numeric IPv4 address or a bracketed IPv6 address ([::1]:9477)"};
  };
  const size_t colon = listen.rfind(':');
  if (colon == std::string_view::npos) return bad("no port");
  uint64_t port = 0;
  if (!ParseUnsigned(listen.substr(colon + 1), port) || port > 65535) return bad("bad port");
  std::string_view host = listen.substr(0, colon);
  int family = AF_INET;
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
    family = AF_INET6;
  }
  in6_addr buf{};  // large enough for either family
  ListenAddress a{std::string(host), static_cast<uint16_t>(port)};
  if (::inet_pton(family, a.host.c_str(), &buf) != 1) return bad("not a numeric address");
  return a;
}

MetricsServer::MetricsServer() : impl_(std::make_unique<Impl>()) {}

MetricsServer::~MetricsServer() { Stop(); }

Status MetricsServer::Start(const std::string& listen) {
  if (impl_->started) return Error{"metrics-listen " + listen + ": the metrics server is already started"};
  Result<ListenAddress> address = ParseListenAddress(listen);
  if (!address) return address.error();
  const ListenAddress& a = address.value();
  impl_->Configure();
  errno = 0;
  int port = -1;
  if (a.port == 0) {
    port = impl_->server.bind_to_any_port(a.host);
  } else if (impl_->server.bind_to_port(a.host, a.port)) {
    port = a.port;
  }
  const int err = errno;
  if (port <= 0) {
    return Error{"metrics-listen " + listen + ": cannot listen" + (err != 0 ? ": " + std::string(std::strerror(err)) : "")};
  }
  impl_->started = true;
  impl_->port = static_cast<uint16_t>(port);
  Impl* impl = impl_.get();
  impl_->thread = std::thread([impl] {
    impl->server.listen_after_bind();
    impl->done = true;
  });
  return Ok{};
}

void MetricsServer::Publish(AgentMetrics metrics) {
  auto next = std::make_shared<const AgentMetrics>(std::move(metrics));
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->latest.swap(next);
  }
  // The old snapshot is freed here, outside the lock (unless a scrape
  // still renders it).
}

void MetricsServer::Stop() {
  if (!impl_->thread.joinable()) return;
  // httplib's stop() does nothing until the accept loop has started, and
  // must close the listening socket once: ask until it is closed (or the
  // loop ended on its own).
  while (!impl_->done && impl_->server.listening()) {
    impl_->server.stop();
    if (impl_->server.listening()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  impl_->thread.join();
}

uint16_t MetricsServer::port() const { return impl_->port; }

uint64_t MetricsServer::scrapes() const { return impl_->scrapes; }

}  // namespace ix
