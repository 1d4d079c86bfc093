// Test helpers for the HTTP probes (readiness_test, http_probe_test) and
// the node agent's HTTP clients: ServerThread, a cpp-httplib server on a
// thread of its own, the base of every test server; TestServer, a tiny vLLM
// stand-in on it; and RawPort, a bare socket that refuses connections
// (bound, not listening) or accepts them into its backlog and never answers
// (listening).
//
// TestServer: /health answers `health_status` after the first
// `health_fail_first` requests (503 before); /v1/models answers the model
// list after `models_empty_first` requests (an empty list before);
// /chunked/v1/models the same with chunked transfer encoding, cut inside the
// JSON; /big more than the probe's body cap; /slow after 300 ms. It counts
// requests, listens on `host`, and ok() is false when it could not bind.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>

#include "core/process/http_probe.h"

namespace ix {
namespace testing_http {

inline std::string HostPort(const std::string& host, int port) {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

// An httplib::Server serving on a thread of its own, on `host` at a free
// port, from Start() until it is destroyed. Its owner sets the routes on
// server() and calls Start(); ok() is false when it could not bind. An
// owner whose routes use its other members declares it after them, so that
// it stops before they go.
class ServerThread {
 public:
  explicit ServerThread(std::string host) : host_(std::move(host)) {
    // Debian's cpp-httplib: set_socket_options replaces the default
    // (SO_REUSEADDR), so it is set again here; TCP_NODELAY sends answers at
    // once on keep-alive connections (accepted sockets inherit it).
    server_.set_socket_options([](socket_t sock) {
      int one = 1;
      ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
      ::setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    });
  }
  ~ServerThread() {
    if (!thread_.joinable()) return;
    server_.stop();
    thread_.join();
  }
  ServerThread(const ServerThread&) = delete;
  ServerThread& operator=(const ServerThread&) = delete;

  httplib::Server& server() { return server_; }
  // Binds and serves the routes set so far; returns once it is running.
  void Start() {
    port_ = server_.bind_to_any_port(host_);
    if (port_ <= 0) return;
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  bool ok() const { return port_ > 0; }
  int port() const { return port_; }
  // `path` on this server, through `host` when given (a name of the same
  // address, "localhost" say).
  std::string Url(const std::string& path, const std::string& host = "") const {
    return "http://" + HostPort(host.empty() ? host_ : host, port_) + path;
  }

 private:
  std::string host_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

class TestServer {
 public:
  std::atomic<int> health_status{200};
  std::atomic<int> health_fail_first{0};
  std::atomic<int> health_hits{0};
  std::atomic<int> models_empty_first{0};
  std::atomic<int> models_hits{0};

  explicit TestServer(std::string host = "127.0.0.1") : http_(std::move(host)) {
    using namespace std::chrono_literals;
    httplib::Server& server = http_.server();
    server.set_keep_alive_timeout(1);
    server.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
      const int n = health_hits++;
      res.status = n < health_fail_first ? 503 : health_status.load();
    });
    server.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
      const int n = models_hits++;
      res.set_content(n < models_empty_first ? R"({"object":"list","data":[]})" : Models(), "application/json");
    });
    server.Get("/chunked/v1/models", [this](const httplib::Request&, httplib::Response& res) {
      res.set_chunked_content_provider("application/json", [this](size_t, httplib::DataSink& sink) {
        const std::string body = Models();
        const size_t a = body.size() / 3;
        const size_t b = 2 * body.size() / 3;
        sink.write(body.data(), a);
        sink.write(body.data() + a, b - a);
        sink.write(body.data() + b, body.size() - b);
        sink.done();
        return true;
      });
    });
    server.Get("/big", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(std::string(kProbeMaxBody + 1, 'x'), "text/plain");
    });
    server.Get("/slow", [](const httplib::Request&, httplib::Response& res) {
      std::this_thread::sleep_for(300ms);
      res.status = 200;
    });
    http_.Start();
  }

  bool ok() const { return http_.ok(); }
  int port() const { return http_.port(); }
  void SetModels(std::string body) {
    std::lock_guard<std::mutex> lock(mu_);
    models_ = std::move(body);
  }
  std::string Models() {
    std::lock_guard<std::mutex> lock(mu_);
    return models_;
  }
  std::string Url(const std::string& path) const { return http_.Url(path); }

 private:
  std::mutex mu_;
  std::string models_ = R"({"object":"list","data":[{"id":"deepseek-ai/DeepSeek-V4.1-Flash","object":"model"}]})";
  ServerThread http_;  // last: it stops before the routes' members go
};

class RawPort {
 public:
  explicit RawPort(bool listening) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    socklen_t len = sizeof sa;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &len);
    port_ = ntohs(sa.sin_port);
    if (listening) ::listen(fd_, 16);
  }
  ~RawPort() { ::close(fd_); }
  RawPort(const RawPort&) = delete;
  RawPort& operator=(const RawPort&) = delete;
  int fd() const { return fd_; }
  int port() const { return port_; }
  std::string Url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port_) + path; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

}  // namespace testing_http
}  // namespace ix
