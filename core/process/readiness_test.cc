#include "core/process/readiness.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <httplib.h>

#include "tests/support/curl_prober.h"
#include "tests/support/http_test_server.h"

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

namespace ix {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

using testing_http::TestServer;
// A port that refuses connections: bound, never listening.
struct RefusingPort : testing_http::RawPort {
  RefusingPort() : RawPort(false) {}
};

ReadinessCheck Health(const std::string& url) { return {ReadinessTemplate::Kind::kHttpOk, url}; }
ReadinessCheck Models(const std::string& url) { return {ReadinessTemplate::Kind::kModelsNonEmpty, url}; }

WaitReadyOptions Within(std::chrono::milliseconds d) {
  WaitReadyOptions o;
  o.deadline = Clock::now() + d;
  return o;
}

bool Has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(EvaluateModels, NeedsStatus200AndANonEmptyDataArray) {
  EXPECT_TRUE(EvaluateModels(200, R"({"data":[{"id":"m"}]})").ready);
  ProbeResult r = EvaluateModels(200, R"({"object":"list","data":[]})");
  EXPECT_FALSE(r.ready);
  EXPECT_EQ(r.detail, "HTTP 200 but the model list is empty");
  r = EvaluateModels(503, R"({"data":[{"id":"m"}]})");
  EXPECT_FALSE(r.ready);
  EXPECT_EQ(r.detail, "HTTP 503");
  EXPECT_EQ(r.http_status, 503);
  r = EvaluateModels(200, "[1]");
  EXPECT_FALSE(r.ready);
  EXPECT_EQ(r.detail, "HTTP 200 but the body is not a model list (expected {\"data\": [...]}): '[1]'");
  r = EvaluateModels(200, R"({"data":{}})");
  EXPECT_FALSE(r.ready);
  r = EvaluateModels(200, "<html>starting</html>");
  EXPECT_FALSE(r.ready);
  EXPECT_TRUE(Has(r.detail, "HTTP 200 but the body is not JSON (")) << r.detail;
  EXPECT_TRUE(Has(r.detail, "'<html>starting</html>'")) << r.detail;
}

TEST(Probe, ConnectionRefusedIsNotReady) {
  RefusingPort port;
  const auto t0 = Clock::now();
  ProbeResult r = ProbeHttpOk(port.Url("/health"), 1000ms);
  EXPECT_FALSE(r.ready);
  EXPECT_EQ(r.http_status, 0);
  EXPECT_FALSE(r.detail.empty());
  EXPECT_LT(Clock::now() - t0, 900ms);  // not the 1 s timeout (room for a busy machine)
  std::printf("refused: %s\n", r.detail.c_str());
  r = ProbeModelsNonEmpty(port.Url("/v1/models"), 1000ms);
  EXPECT_FALSE(r.ready);
  EXPECT_EQ(r.http_status, 0);
}

// tcp_listening: ready once something accepts connections on HOST:PORT (a
// listening socket accepts into its backlog, no HTTP needed); refused and
// malformed addresses are not ready and say why.
TEST(Probe, TcpListeningIsReadyWhenAConnectionIsAccepted) {
  CurlProber prober;  // any HttpGetProber: tcp_listening is its own, not an HTTP GET
  testing_http::RawPort listening(true);
  RefusingPort refusing;
  const std::string port = std::to_string(listening.port());
  for (const std::string& addr : {"127.0.0.1:" + port, "localhost:" + port}) {
    ProbeResult r = prober.Probe(ReadinessCheck{ReadinessTemplate::Kind::kTcpListening, addr}, ProbeOptions{});
    EXPECT_TRUE(r.ready) << addr << ": " << r.detail;
  }
  ProbeResult r = prober.Probe(
      ReadinessCheck{ReadinessTemplate::Kind::kTcpListening, "127.0.0.1:" + std::to_string(refusing.port())},
      ProbeOptions{});
  EXPECT_FALSE(r.ready);
  EXPECT_TRUE(Has(r.detail, "Connection refused")) << r.detail;
  for (const char* bad : {"127.0.0.1", "127.0.0.1:0", "127.0.0.1:x", "mooncake.example:1", ":5"}) {
    r = prober.Probe(ReadinessCheck{ReadinessTemplate::Kind::kTcpListening, bad}, ProbeOptions{});
    EXPECT_FALSE(r.ready) << bad;
    EXPECT_TRUE(Has(r.detail, "is not HOST:PORT")) << bad << ": " << r.detail;
  }
}

TEST(Probe, HealthStatusDecides) {
  TestServer server;
  server.health_status = 503;
  ProbeResult r = ProbeHttpOk(server.Url("/health"), 1000ms);
  EXPECT_FALSE(r.ready);
  EXPECT_EQ(r.http_status, 503);
  EXPECT_EQ(r.detail, "HTTP 503");
  server.health_status = 200;
  r = ProbeHttpOk(server.Url("/health"), 1000ms);
  EXPECT_TRUE(r.ready) << r.detail;
  EXPECT_EQ(r.http_status, 200);
  r = ProbeHttpOk(server.Url("/nope"), 1000ms);
  EXPECT_FALSE(r.ready);
  EXPECT_EQ(r.http_status, 404);
}

TEST(Probe, ModelsMustBeListed) {
  TestServer server;
  server.SetModels(R"({"object":"list","data":[]})");
  ProbeResult r = ProbeModelsNonEmpty(server.Url("/v1/models"), 1000ms);
  EXPECT_FALSE(r.ready);
  EXPECT_EQ(r.detail, "HTTP 200 but the model list is empty");
  server.SetModels(R"({"object":"list","data":[{"id":"m","object":"model"}]})");
  r = ProbeModelsNonEmpty(server.Url("/v1/models"), 1000ms);
  EXPECT_TRUE(r.ready) << r.detail;
}

TEST(Probe, ASlowAnswerTimesOut) {
  TestServer server;
  const auto t0 = Clock::now();
  ProbeResult r = ProbeHttpOk(server.Url("/slow"), 50ms);
  EXPECT_FALSE(r.ready);
  // Cut at 50 ms: "timed out" and not ready show it (the answer would come
  // at 300 ms, ready); the bound only leaves room for a busy machine.
  EXPECT_LT(Clock::now() - t0, 1000ms);
  EXPECT_TRUE(Has(r.detail, "imed out")) << r.detail;
}

TEST(Probe, AProxyInTheEnvironmentIsIgnored) {
  TestServer server;
  ::setenv("http_proxy", "http://127.0.0.1:1", 1);
  ::setenv("HTTP_PROXY", "http://127.0.0.1:1", 1);
  ProbeResult r = ProbeHttpOk(server.Url("/health"), 1000ms);
  ::unsetenv("http_proxy");
  ::unsetenv("HTTP_PROXY");
  EXPECT_TRUE(r.ready) << r.detail;
}

TEST(WaitReady, ChecksPassInOrderProbingSoon) {
  TestServer server;
  server.health_fail_first = 5;
  server.models_empty_first = 3;
  const auto t0 = Clock::now();
  Status s = WaitReady({Health(server.Url("/health")), Models(server.Url("/v1/models"))}, Within(5000ms));
  const auto took = Clock::now() - t0;
  EXPECT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(server.health_hits, 6);
  EXPECT_EQ(server.models_hits, 4);
  // Eight failed probes, each followed by a pause of first_interval (1 ms):
  // not a busy loop, and well under a second.
  EXPECT_GE(took, 8ms);
  EXPECT_LT(took, 1000ms);
}

TEST(NextProbeGap, ASixteenthOfTheWaitWithinTheBounds) {
  WaitReadyOptions o;  // first_interval 1 ms, interval 20 ms
  EXPECT_EQ(NextProbeGap(0ms, o), 1ms);
  EXPECT_EQ(NextProbeGap(31ms, o), 1ms);
  EXPECT_EQ(NextProbeGap(48ms, o), 3ms);
  EXPECT_EQ(NextProbeGap(160ms, o), 10ms);
  EXPECT_EQ(NextProbeGap(320ms, o), 20ms);
  EXPECT_EQ(NextProbeGap(3600s, o), 20ms);  // an hour of model load: every 20 ms
  o.first_interval = 5ms;
  o.interval = 2ms;  // an interval below first_interval wins
  EXPECT_EQ(NextProbeGap(0ms, o), 2ms);
  EXPECT_EQ(NextProbeGap(1000ms, o), 2ms);
}

TEST(WaitReady, RefusedUntilTheServerComes) {
  RefusingPort port;
  Status s = WaitReady({Health(port.Url("/health"))}, Within(150ms));
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Has(s.error().message, "readiness check 1 of 1 (http_ok " + port.Url("/health") + ") not ready after 0.1"))
      << s.error().message;
  EXPECT_TRUE(Has(s.error().message, "; last: ")) << s.error().message;
}

TEST(WaitReady, TheDeadlineNamesTheCheckAndTheLastAnswer) {
  TestServer server;
  server.health_status = 503;
  const auto t0 = Clock::now();
  Status s = WaitReady({Health(server.Url("/health")), Models(server.Url("/v1/models"))}, Within(200ms));
  const auto took = Clock::now() - t0;
  ASSERT_FALSE(s.ok());
  const std::string& m = s.error().message;
  // The wait is timed from WaitReady's start, a little after Within() set
  // the deadline (a millisecond or two under a sanitizer): 0.19x or 0.2xx.
  const std::string prefix = "readiness check 1 of 2 (http_ok " + server.Url("/health") + ") not ready after ";
  ASSERT_EQ(m.rfind(prefix, 0), 0u) << m;
  const double secs = std::stod(m.substr(prefix.size()));
  // The upper bound catches a probe not cut at the deadline (2 s each) and
  // leaves room for a busy machine, where a sanitized run was seen 0.46 s
  // late.
  EXPECT_GE(secs, 0.19) << m;
  EXPECT_LT(secs, 1.5) << m;
  EXPECT_TRUE(Has(m, "; last: HTTP 503")) << m;
  EXPECT_GE(took, 200ms);
  EXPECT_LT(took, 1500ms);
  // Probed often (a loaded machine, sanitizers: fewer), but with pauses
  // (NextProbeGap: about 16 + 16 ln(200/16), i.e. ~56 in 200 ms).
  EXPECT_GE(server.health_hits, 3);
  EXPECT_LE(server.health_hits, 80);
  EXPECT_EQ(server.models_hits, 0);

  server.health_status = 200;
  server.SetModels(R"({"data":[]})");
  s = WaitReady({Health(server.Url("/health")), Models(server.Url("/v1/models"))}, Within(100ms));
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Has(s.error().message, "readiness check 2 of 2 (models_nonempty " + server.Url("/v1/models") +
                                          ") not ready after "))
      << s.error().message;
  EXPECT_TRUE(Has(s.error().message, "last: HTTP 200 but the model list is empty")) << s.error().message;
}

TEST(WaitReady, TheAbortPredicateStopsTheWait) {
  TestServer server;
  server.health_status = 503;
  WaitReadyOptions o = Within(30000ms);
  int asked = 0;
  o.abort = [&]() -> std::optional<std::string> {
    if (++asked < 4) return std::nullopt;
    return "engine (pid 12) exited with status 1";
  };
  const auto t0 = Clock::now();
  Status s = WaitReady({Health(server.Url("/health"))}, o);
  ASSERT_FALSE(s.ok());
  EXPECT_LT(Clock::now() - t0, 1000ms);
  EXPECT_EQ(asked, 4);
  EXPECT_EQ(server.health_hits, 3);
  const std::string& m = s.error().message;
  EXPECT_EQ(m.rfind("readiness check 1 of 1 (http_ok " + server.Url("/health") + "): stopped waiting after ", 0), 0u)
      << m;
  EXPECT_TRUE(Has(m, "(3 probes): engine (pid 12) exited with status 1; last: HTTP 503")) << m;
}

// A prober that answers from a script, for the wait's own rules.
class ScriptedProber final : public ReadinessProber {
 public:
  std::vector<bool> answers;
  size_t calls = 0;
  std::chrono::milliseconds last_timeout{0};
  ProbeResult Probe(const ReadinessCheck&, const ProbeOptions& o) override {
    last_timeout = o.timeout;
    ProbeResult r;
    r.ready = calls < answers.size() && answers[calls];
    r.detail = r.ready ? "" : "no";
    ++calls;
    return r;
  }
};

TEST(WaitReady, EveryCheckIsProbedAtLeastOnceEvenPastTheDeadline) {
  ScriptedProber p;
  p.answers = {true, true};
  WaitReadyOptions o;
  o.deadline = Clock::now() - 1s;
  EXPECT_TRUE(WaitReady({Health("a"), Models("b")}, o, p).ok());
  EXPECT_EQ(p.calls, 2u);
  EXPECT_EQ(p.last_timeout, o.probe.timeout);
  EXPECT_TRUE(WaitReady({}, o, p).ok());  // nothing to wait for
}

TEST(WaitReady, AProbeCutByTheDeadlineDoesNotHideTheAnswerBeforeIt) {
  // Answers 503 when given its full time; when cut short, times out after
  // the headers of a 200 came (a status, but no whole answer).
  class CutProber final : public ReadinessProber {
   public:
    ProbeResult Probe(const ReadinessCheck&, const ProbeOptions& o) override {
      ProbeResult r;
      if (o.timeout < 50ms) {
        r.http_status = 200;
        r.detail = "Operation timed out";
      } else {
        r.answered = true;
        r.http_status = 503;
        r.detail = "HTTP 503";
      }
      return r;
    }
  } p;
  WaitReadyOptions o = Within(220ms);
  o.first_interval = 100ms;
  o.interval = 100ms;
  o.probe.timeout = 50ms;  // probes at 0, 100, 200 (20 ms left) and 220 ms (1 ms)
  Status s = WaitReady({Health("http://x/health")}, o, p);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Has(s.error().message, "probes); last: HTTP 503 (then, cut at the deadline: Operation timed out)"))
      << s.error().message;
  // Every probe cut (the deadline is nearer than probe.timeout): the last
  // one that got an answer still counts.
  o = Within(220ms);
  o.first_interval = 100ms;
  o.interval = 100ms;
  o.probe.timeout = 1000ms;
  s = WaitReady({Health("http://x/health")}, o, p);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Has(s.error().message, "probes); last: HTTP 503 (then, cut at the deadline: Operation timed out)"))
      << s.error().message;
}

TEST(WaitReady, EachProbeIsCutAtTheDeadline) {
  ScriptedProber p;
  p.answers = {true};
  WaitReadyOptions o = Within(300ms);
  o.probe.timeout = 5000ms;
  EXPECT_TRUE(WaitReady({Health("a")}, o, p).ok());
  EXPECT_LE(p.last_timeout, 300ms);
  EXPECT_GT(p.last_timeout, 0ms);
}

}  // namespace
}  // namespace ix
