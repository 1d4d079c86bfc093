#include "core/process/http_probe.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

#include "tests/support/curl_prober.h"
#include "tests/support/http_test_server.h"
#include "core/process/readiness.h"

namespace ix {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

bool Has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

using testing_http::HostPort;
using testing_http::RawPort;
using testing_http::TestServer;

// Answers every connection with `reply` (raw bytes), then closes it; keeps
// the last request it read.
class ScriptedServer {
 public:
  explicit ScriptedServer(std::string reply) : port_(true), reply_(std::move(reply)) {
    thread_ = std::thread([this] { Serve(); });
  }
  ~ScriptedServer() {
    stop_ = true;
    thread_.join();
  }
  std::string Url(const std::string& path) const { return port_.Url(path); }
  int port() const { return port_.port(); }
  std::string LastRequest() {
    std::lock_guard<std::mutex> lock(mu_);
    return request_;
  }

 private:
  void Serve() {
    while (!stop_) {
      pollfd p{port_.fd(), POLLIN, 0};
      if (::poll(&p, 1, 10) <= 0) continue;
      const int c = ::accept4(port_.fd(), nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      std::string req;
      char buf[4096];
      while (req.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = ::recv(c, buf, sizeof buf, 0);
        if (n <= 0) break;
        req.append(buf, static_cast<size_t>(n));
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        request_ = req;
      }
      (void)::send(c, reply_.data(), reply_.size(), MSG_NOSIGNAL);
      ::close(c);
    }
  }
  RawPort port_;
  std::string reply_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::string request_;
  std::thread thread_;
};

size_t OpenFds() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

ReadinessCheck Health(const std::string& url) { return {ReadinessTemplate::Kind::kHttpOk, url}; }
ReadinessCheck Models(const std::string& url) { return {ReadinessTemplate::Kind::kModelsNonEmpty, url}; }

ProbeOptions Timeout(std::chrono::milliseconds t) {
  ProbeOptions o;
  o.timeout = t;
  return o;
}

// ---- ParseHttpUrl ------------------------------------------------------------

TEST(ParseHttpUrl, HostPortAndTarget) {
  Result<HttpUrl> u = ParseHttpUrl("http://127.0.0.1:8000/health");
  ASSERT_TRUE(u.ok()) << u.error().message;
  EXPECT_EQ(u.value().host, "127.0.0.1");
  EXPECT_EQ(u.value().port, 8000);
  EXPECT_EQ(u.value().target, "/health");
  EXPECT_EQ(u.value().host_header, "127.0.0.1:8000");

  u = ParseHttpUrl("HTTP://LocalHost:30000/v1/models?x=1#frag");
  ASSERT_TRUE(u.ok()) << u.error().message;
  EXPECT_EQ(u.value().host, "LocalHost");
  EXPECT_EQ(u.value().target, "/v1/models?x=1");

  u = ParseHttpUrl("http://[::1]:9/health");
  ASSERT_TRUE(u.ok()) << u.error().message;
  EXPECT_EQ(u.value().host, "::1");
  EXPECT_EQ(u.value().host_header, "[::1]:9");

  u = ParseHttpUrl("http://node-01.cluster");
  ASSERT_TRUE(u.ok()) << u.error().message;
  EXPECT_EQ(u.value().port, 80);
  EXPECT_EQ(u.value().target, "/");
  EXPECT_EQ(ParseHttpUrl("http://h:?q").value().target, "/?q");
}

TEST(ParseHttpUrl, UnsupportedOrMalformedUrlsSayWhy) {
  auto why = [](const std::string& url) {
    Result<HttpUrl> u = ParseHttpUrl(url);
    return u.ok() ? std::string("(parsed)") : u.error().message;
  };
  EXPECT_EQ(why("https://127.0.0.1:8000/health"),
            "URL not supported (only plain http:// URLs are, no https): 'https://127.0.0.1:8000/health'");
  EXPECT_EQ(why("http:///health"), "malformed URL (no host): 'http:///health'");
  EXPECT_EQ(why("http://:80/health"), "malformed URL (no host): 'http://:80/health'");
  EXPECT_EQ(why("127.0.0.1:8000/health"), "malformed URL (no http:// scheme): '127.0.0.1:8000/health'");
  // Each URL, and a part of what the error says about it.
  const std::pair<std::string, std::string> cases[] = {
      {"http://h:0/", "(bad port)"},
      {"http://h:65536/", "(bad port)"},
      {"http://h:99999999999999999999/", "(bad port)"},
      {"http://h:8x/", "(bad port)"},
      {"http://u:p@h/", "credentials"},
      {"http://h/a b", "space or control character"},
      {"http://h/a\r\nX: y", "space or control character"},
      {"http://[::1/", "no ']'"},
      {"http://[zz]:1/", "bad IPv6 address"},
      {"http://::1:80/", "malformed URL"},
      {"http://h!/", "bad character"},
      {"", "no http:// scheme"},
  };
  for (const auto& [url, part] : cases) EXPECT_TRUE(Has(why(url), part)) << url << ": " << why(url);
}

// ---- ParseHttpAnswer ---------------------------------------------------------

using State = HttpAnswer::State;

// Parses `raw` cut short at every length (each must want more), then whole.
HttpAnswer ParseGrowing(const std::string& raw) {
  for (size_t n = 0; n < raw.size(); ++n) {
    EXPECT_EQ(ParseHttpAnswer(std::string_view(raw).substr(0, n), false).state, State::kIncomplete) << n;
  }
  return ParseHttpAnswer(raw, false);
}

// ParseHttpAnswer(raw, closed) has `state` and `status`, and `text` as its
// detail when kBad, else as its body.
void ExpectAnswer(std::string_view raw, bool closed, State state, long status, const std::string& text) {
  const HttpAnswer a = ParseHttpAnswer(raw, closed);
  EXPECT_EQ(a.state, state) << raw;
  EXPECT_EQ(a.status, status) << raw;
  EXPECT_EQ(state == State::kBad ? a.detail : a.body, text) << raw;
}

TEST(ParseHttpAnswer, ContentLengthBody) {
  const std::string raw = "HTTP/1.1 200 OK\r\ncontent-LENGTH: 5\r\nX: y\r\n\r\nhello";
  HttpAnswer a = ParseGrowing(raw);
  EXPECT_EQ(a.state, State::kComplete);
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(a.body, "hello");
  ExpectAnswer("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel", true, State::kBad, 200,
               "transfer closed with 2 bytes remaining to read");
}

TEST(ParseHttpAnswer, ChunkedBodyWithExtensionsAndTrailers) {
  const std::string raw =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, Chunked\r\nContent-Length: 999\r\n\r\n"
      "4;ext=1\r\n{\"da\r\n9 \r\nta\":[{}]}\r\n0\r\nX-Trailer: t\r\n\r\n";
  HttpAnswer a = ParseGrowing(raw);
  EXPECT_EQ(a.state, State::kComplete) << a.detail;
  EXPECT_EQ(a.body, R"({"data":[{}]})");
  a = ParseHttpAnswer(std::string_view(raw).substr(0, raw.size() - 5), true);
  EXPECT_EQ(a.state, State::kBad);
  EXPECT_EQ(a.detail, "transfer closed with outstanding read data remaining");
  a = ParseHttpAnswer("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", false);
  EXPECT_EQ(a.state, State::kBad);
  EXPECT_TRUE(Has(a.detail, "bad chunk size line")) << a.detail;
  a = ParseHttpAnswer("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n", false);
  EXPECT_EQ(a.state, State::kBad);
  EXPECT_TRUE(Has(a.detail, "longer than its size")) << a.detail;
  a = ParseHttpAnswer("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n200000\r\n", false);
  EXPECT_EQ(a.state, State::kBad);
  EXPECT_EQ(a.detail, "answer larger than 1 MiB");
}

TEST(ParseHttpAnswer, BodyUntilCloseInterimAnswersAndBareLineFeeds) {
  const std::string until_close = "HTTP/1.0 503 Service Unavailable\nServer: x\n\nnot yet";
  ExpectAnswer(until_close, false, State::kIncomplete, 503, "");
  ExpectAnswer(until_close, true, State::kComplete, 503, "not yet");
  ExpectAnswer("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n", false, State::kComplete, 204, "");
}

TEST(ParseHttpAnswer, MalformedAnswersSayWhy) {
  EXPECT_EQ(ParseHttpAnswer("", true).detail, "Empty reply from server");
  EXPECT_EQ(ParseHttpAnswer("SSH-2.0-OpenSSH\r\n", false).detail, "not an HTTP/1.x answer: 'SSH-2.0-OpenSSH'");
  EXPECT_EQ(ParseHttpAnswer("HTTP/1.1 200 OK\r\nbroken\r\n\r\n", false).detail, "malformed header line 'broken'");
  EXPECT_EQ(ParseHttpAnswer("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", false).detail,
            "conflicting Content-Length headers");
  EXPECT_EQ(ParseHttpAnswer("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", false).detail,
            "bad Content-Length '-1'");
  EXPECT_EQ(ParseHttpAnswer("HTTP/1.1 200 OK\r\nContent-Length: 2000000\r\n\r\n", false).detail,
            "answer larger than 1 MiB");
  EXPECT_EQ(ParseHttpAnswer("HTTP/1.1 200 OK\r\nX: y", true).detail, "connection closed in the middle of the headers");
  const std::string huge = "HTTP/1.1 200 OK\r\nX: " + std::string(kProbeMaxHeaders, 'a');
  EXPECT_EQ(ParseHttpAnswer(huge, false).detail, "header block larger than 64 KiB");
}

// ---- SocketProber against servers --------------------------------------------

TEST(SocketProber, HealthStatusDecides) {
  TestServer server;
  SocketProber p;
  ProbeResult r = p.HttpOk(server.Url("/health"), Timeout(1000ms));
  EXPECT_TRUE(r.ready) << r.detail;
  EXPECT_EQ(r.http_status, 200);
  server.health_status = 503;
  r = p.HttpOk(server.Url("/health"), Timeout(1000ms));
  EXPECT_FALSE(r.ready);
  EXPECT_EQ(r.http_status, 503);
  EXPECT_EQ(r.detail, "HTTP 503");
  r = p.Probe(Health(server.Url("/nope")), Timeout(1000ms));
  EXPECT_FALSE(r.ready);
  EXPECT_EQ(r.http_status, 404);
  EXPECT_EQ(r.detail, "HTTP 404");
}

TEST(SocketProber, ModelsMustBeListed) {
  TestServer server;
  SocketProber p;
  ProbeResult r = p.Probe(Models(server.Url("/v1/models")), Timeout(1000ms));
  EXPECT_TRUE(r.ready) << r.detail;
  EXPECT_EQ(r.http_status, 200);
  server.SetModels(R"({"object":"list","data":[]})");
  r = p.Probe(Models(server.Url("/v1/models")), Timeout(1000ms));
  EXPECT_FALSE(r.ready);
  EXPECT_EQ(r.detail, "HTTP 200 but the model list is empty");
  server.SetModels("<html>starting</html>");
  r = p.ModelsNonEmpty(server.Url("/v1/models"), Timeout(1000ms));
  EXPECT_FALSE(r.ready);
  EXPECT_TRUE(Has(r.detail, "HTTP 200 but the body is not JSON (")) << r.detail;
}

TEST(SocketProber, ChunkedBodiesAreDecoded) {
  TestServer server;
  SocketProber p;
  ProbeResult r = p.ModelsNonEmpty(server.Url("/chunked/v1/models"), Timeout(1000ms));
  EXPECT_TRUE(r.ready) << r.detail;
  server.SetModels(R"({"object":"list","data":[]})");
  r = p.ModelsNonEmpty(server.Url("/chunked/v1/models"), Timeout(1000ms));
  EXPECT_FALSE(r.ready);
  EXPECT_EQ(r.detail, "HTTP 200 but the model list is empty");
}

TEST(SocketProber, AnAnswerOverTheCapIsNotReady) {
  TestServer server;
  ProbeResult r = SocketProber().ModelsNonEmpty(server.Url("/big"), Timeout(2000ms));
  EXPECT_FALSE(r.ready);
  EXPECT_EQ(r.detail, "answer larger than 1 MiB");
}

TEST(SocketProber, SendsAMinimalHttp11Request) {
  ScriptedServer server("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
  ProbeResult r = SocketProber().HttpOk(server.Url("/health?x=1"), Timeout(1000ms));
  EXPECT_TRUE(r.ready) << r.detail;
  EXPECT_EQ(server.LastRequest(), "GET /health?x=1 HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(server.port()) +
                                      "\r\nUser-Agent: ix-stepd\r\nAccept: */*\r\nConnection: close\r\n\r\n");
}

TEST(SocketProber, AnAnswerCutShortIsNotReady) {
  ScriptedServer server("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"data\":");
  ProbeResult r = SocketProber().ModelsNonEmpty(server.Url("/v1/models"), Timeout(1000ms));
  EXPECT_FALSE(r.ready);
  EXPECT_EQ(r.http_status, 200);
  EXPECT_EQ(r.detail, "transfer closed with 92 bytes remaining to read");
}

TEST(SocketProber, ARefusedPortFailsAtOnce) {
  RawPort port(false);
  const auto t0 = Clock::now();
  ProbeResult r = SocketProber().HttpOk(port.Url("/health"), Timeout(1000ms));
  EXPECT_LT(Clock::now() - t0, 800ms);  // not the 1 s timeout (room for a busy machine)
  EXPECT_FALSE(r.ready);
  EXPECT_EQ(r.http_status, 0);
  EXPECT_EQ(r.detail.rfind("Failed to connect to 127.0.0.1 port " + std::to_string(port.port()) + " after ", 0), 0u)
      << r.detail;
  EXPECT_TRUE(Has(r.detail, " ms: Couldn't connect to server")) << r.detail;
  std::printf("refused: %s\n", r.detail.c_str());
}

TEST(SocketProber, ASilentServerTimesOut) {
  RawPort port(true);  // connects complete in the backlog; nothing answers
  const auto t0 = Clock::now();
  ProbeResult r = SocketProber().HttpOk(port.Url("/health"), Timeout(100ms));
  const auto took = Clock::now() - t0;
  EXPECT_FALSE(r.ready);
  EXPECT_EQ(r.http_status, 0);
  EXPECT_GE(took, 100ms);
  EXPECT_LT(took, 1000ms);  // its own timeout, not a default (room for a busy machine)
  EXPECT_TRUE(Has(r.detail, "Operation timed out after ")) << r.detail;
  EXPECT_TRUE(Has(r.detail, " milliseconds with 0 bytes received")) << r.detail;
  std::printf("timed out: %s\n", r.detail.c_str());
}

TEST(SocketProber, UnsupportedUrlsAreNotReady) {
  SocketProber p;
  for (const char* url : {"https://127.0.0.1:1/health", "http:///health", "http://127.0.0.1:0/", "ftp://x/",
                          "", "http://[::1", "http://127.0.0.1:65536/"}) {
    ProbeResult r = p.HttpOk(url, Timeout(100ms));
    EXPECT_FALSE(r.ready) << url;
    EXPECT_EQ(r.http_status, 0) << url;
    EXPECT_TRUE(Has(r.detail, "URL not supported") || Has(r.detail, "malformed URL")) << url << ": " << r.detail;
  }
  EXPECT_TRUE(Has(p.HttpOk("https://127.0.0.1:1/health", Timeout(100ms)).detail, "not supported"));
  ProbeResult r = p.HttpOk("http://no-such-host.invalid/health", Timeout(100ms));
  EXPECT_FALSE(r.ready);
  EXPECT_TRUE(Has(r.detail, "Could not resolve host: no-such-host.invalid")) << r.detail;
}

TEST(SocketProber, Ipv6Literal) {
  TestServer server("::1");
  if (!server.ok()) GTEST_SKIP() << "cannot listen on ::1";
  ProbeResult r = SocketProber().HttpOk("http://[::1]:" + std::to_string(server.port()) + "/health", Timeout(1000ms));
  EXPECT_TRUE(r.ready) << r.detail;
}

TEST(SocketProber, LocalhostIsIpv4ThenIpv6) {
  SocketProber p;
  {
    TestServer any("0.0.0.0");
    ASSERT_TRUE(any.ok());
    ProbeResult r = p.HttpOk("http://localhost:" + std::to_string(any.port()) + "/health", Timeout(1000ms));
    EXPECT_TRUE(r.ready) << r.detail;
  }
  TestServer v6("::1");
  if (!v6.ok()) GTEST_SKIP() << "cannot listen on ::1";
  // Nothing on 127.0.0.1 at that port (normally): refused there, then ::1.
  ProbeResult r = p.HttpOk("http://localhost:" + std::to_string(v6.port()) + "/health", Timeout(1000ms));
  EXPECT_TRUE(r.ready) << r.detail;
}

TEST(SocketProber, ProbesLeaveNoDescriptorsOpen) {
  TestServer server;
  RawPort refusing(false);
  RawPort silent(true);
  SocketProber p;
  p.HttpOk(server.Url("/health"), Timeout(1000ms));  // warm up (the server's threads)
  // The server's side of a connection may close a moment after the probe
  // returns: wait for the count to settle.
  auto settled = [](size_t want) {
    size_t n = OpenFds();
    for (int i = 0; i < 200 && n > want; ++i) {
      std::this_thread::sleep_for(5ms);
      n = OpenFds();
    }
    return n;
  };
  std::this_thread::sleep_for(50ms);
  const size_t before = OpenFds();
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(p.HttpOk(server.Url("/health"), Timeout(1000ms)).ready);
  }
  for (int i = 0; i < 20; ++i) {
    EXPECT_TRUE(p.ModelsNonEmpty(server.Url("/chunked/v1/models"), Timeout(1000ms)).ready);
    EXPECT_FALSE(p.HttpOk(refusing.Url("/health"), Timeout(1000ms)).ready);
    EXPECT_FALSE(p.HttpOk("https://127.0.0.1/", Timeout(1000ms)).ready);
  }
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(p.HttpOk(silent.Url("/health"), Timeout(10ms)).ready);
  EXPECT_EQ(settled(before), before);
}

TEST(SocketProber, AgreesWithCurlProber) {
  TestServer server;
  SocketProber sp;
  CurlProber cp;
  auto same = [&](const ReadinessCheck& c) {
    const ProbeResult s = sp.Probe(c, Timeout(1000ms));
    const ProbeResult k = cp.Probe(c, Timeout(1000ms));
    EXPECT_EQ(s.ready, k.ready) << c.url << ": socket '" << s.detail << "', curl '" << k.detail << "'";
    EXPECT_EQ(s.http_status, k.http_status) << c.url;
    if (s.http_status != 0) {
      EXPECT_EQ(s.detail, k.detail) << c.url;
    }
  };
  same(Health(server.Url("/health")));
  same(Health(server.Url("/nope")));
  server.health_status = 503;
  same(Health(server.Url("/health")));
  same(Models(server.Url("/v1/models")));
  same(Models(server.Url("/chunked/v1/models")));
  server.SetModels(R"({"data":[]})");
  same(Models(server.Url("/v1/models")));
  same(Models(server.Url("/chunked/v1/models")));
  server.SetModels("not json");
  same(Models(server.Url("/v1/models")));
  RawPort refusing(false);
  same(Health(refusing.Url("/health")));
}

TEST(SocketProber, WaitReadyRunsOnIt) {
  TestServer server;
  SocketProber p;
  WaitReadyOptions o;
  o.deadline = Clock::now() + 2000ms;
  Status s = WaitReady({Health(server.Url("/health")), Models(server.Url("/v1/models"))}, o, p);
  EXPECT_TRUE(s.ok()) << s.error().message;
}

// Not a check: what one probe of a local server costs, each way.
TEST(SocketProber, Latency) {
  TestServer server;
  auto time = [&](ReadinessProber& p, const ReadinessCheck& c) {
    constexpr int kN = 500;
    std::vector<double> us;
    for (int i = 0; i < kN; ++i) {
      const auto t0 = Clock::now();
      EXPECT_TRUE(p.Probe(c, Timeout(1000ms)).ready);
      us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    }
    std::sort(us.begin(), us.end());
    return std::pair{us[kN / 2], us[kN * 99 / 100]};
  };
  SocketProber sp;
  CurlProber cp;
  for (const ReadinessCheck& c : {Health(server.Url("/health")), Models(server.Url("/v1/models"))}) {
    const auto [s50, s99] = time(sp, c);
    const auto [c50, c99] = time(cp, c);
    std::printf("%s: SocketProber median %.0f us (p99 %.0f), CurlProber (keep-alive) median %.0f us (p99 %.0f)\n",
                c.url.c_str(), s50, s99, c50, c99);
  }
  // A fresh curl handle each time: a new connection, as SocketProber makes.
  std::vector<double> us;
  for (int i = 0; i < 500; ++i) {
    const auto t0 = Clock::now();
    EXPECT_TRUE(ProbeHttpOk(server.Url("/health"), 1000ms).ready);
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  std::sort(us.begin(), us.end());
  std::printf("one-shot ProbeHttpOk (new connection each): median %.0f us (p99 %.0f)\n", us[250], us[495]);
}

}  // namespace
}  // namespace ix
