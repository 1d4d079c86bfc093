// Test helpers for the HTTP probes (readiness_test, http_probe_test):
// TestServer, a tiny vLLM stand-in on cpp-httplib, and RawPort, a bare
// socket that refuses connections (bound, not listening) or accepts them
// into its backlog and never answers (listening).
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

class TestServer {
 public:
  std::atomic<int> health_status{200};
  std::atomic<int> health_fail_first{0};
  std::atomic<int> health_hits{0};
  std::atomic<int> models_empty_first{0};
  std::atomic<int> models_hits{0};

  explicit TestServer(std::string host = "127.0.0.1") : host_(std::move(host)) {
    using namespace std::chrono_literals;
    server_.set_keep_alive_timeout(1);
    // Debian's cpp-httplib: set_socket_options replaces the default
    // (SO_REUSEADDR), so it is set again here; TCP_NODELAY sends answers at
    // once on keep-alive connections (accepted sockets inherit it).
    server_.set_socket_options([](socket_t sock) {
      int one = 1;
      ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
      ::setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    });
    server_.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
      const int n = health_hits++;
      res.status = n < health_fail_first ? 503 : health_status.load();
    });
    server_.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
      const int n = models_hits++;
      res.set_content(n < models_empty_first ? R"({"object":"list","data":[]})" : Models(), "application/json");
    });
    server_.Get("/chunked/v1/models", [this](const httplib::Request&, httplib::Response& res) {
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
    server_.Get("/big", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(std::string(kProbeMaxBody + 1, 'x'), "text/plain");
    });
    server_.Get("/slow", [](const httplib::Request&, httplib::Response& res) {
      std::this_thread::sleep_for(300ms);
      res.status = 200;
    });
    port_ = server_.bind_to_any_port(host_);
    if (port_ <= 0) return;
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(1ms);
  }
  ~TestServer() {
    if (!thread_.joinable()) return;
    server_.stop();
    thread_.join();
  }
  TestServer(const TestServer&) = delete;
  TestServer& operator=(const TestServer&) = delete;

  bool ok() const { return port_ > 0; }
  int port() const { return port_; }
  void SetModels(std::string body) {
    std::lock_guard<std::mutex> lock(mu_);
    models_ = std::move(body);
  }
  std::string Models() {
    std::lock_guard<std::mutex> lock(mu_);
    return models_;
  }
  std::string Url(const std::string& path) const { return "http://" + HostPort(host_, port_) + path; }

 private:
  std::string host_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::string models_ = R"({"object":"list","data":[{"id":"deepseek-ai/DeepSeek-V4.1-Flash","object":"model"}]})";
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
