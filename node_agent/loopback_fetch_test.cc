#include "node_agent/loopback_fetch.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <string>

#include "node_agent/engine_metrics.h"
#include "tests/support/http_test_server.h"

namespace ix {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing_http::RawPort;
using namespace std::chrono_literals;

constexpr char kBody[] =
    "# TYPE vllm:num_requests_running gauge\n"
    "vllm:num_requests_running{engine=\"0\"} 3.0\n"
    "# TYPE vllm:generation_tokens_total counter\n"
    "vllm:generation_tokens_total{engine=\"0\"} 77.0\n";

// A stand-in engine: /metrics answers kBody, /down 503, /chunked kBody in
// chunks, /big more than the fetch's body cap. Listens on `host`; ok() is
// false when it could not bind (no IPv6 here, say).
class Engine : public testing_http::ServerThread {
 public:
  explicit Engine(const std::string& host = "127.0.0.1") : ServerThread(host) {
    server().Get("/metrics", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(kBody, "text/plain; version=0.0.4");
    });
    server().Get("/down", [](const httplib::Request&, httplib::Response& res) { res.status = 503; });
    server().Get("/chunked", [](const httplib::Request&, httplib::Response& res) {
      res.set_chunked_content_provider("text/plain", [](size_t, httplib::DataSink& sink) {
        const std::string body = kBody;
        sink.write(body.data(), 10);
        sink.write(body.data() + 10, body.size() - 10);
        sink.done();
        return true;
      });
    });
    server().Get("/big", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(std::string(kProbeMaxBody + 1, '#'), "text/plain");
    });
    Start();
  }
};

Result<std::string> FetchOne(const std::string& url, std::chrono::milliseconds timeout = 2000ms) {
  std::vector<Result<std::string>> r = FetchLoopback({url}, timeout);
  EXPECT_EQ(r.size(), 1u);
  return std::move(r.front());
}

TEST(LoopbackFetch, FetchesABody) {
  Engine engine;
  ASSERT_TRUE(engine.ok());
  const Result<std::string> r = FetchOne(engine.Url("/metrics"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value(), kBody);
}

TEST(LoopbackFetch, LocalhostAndChunkedBodies) {
  Engine engine;
  ASSERT_TRUE(engine.ok());
  const Result<std::string> r = FetchOne(engine.Url("/chunked", "localhost"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value(), kBody);
  const Result<std::string> upper = FetchOne(engine.Url("/metrics", "LocalHost"));
  ASSERT_TRUE(upper.ok()) << upper.error().message;
}

TEST(LoopbackFetch, Ipv6Loopback) {
  Engine engine("::1");
  if (!engine.ok()) GTEST_SKIP() << "no IPv6 loopback here";
  const Result<std::string> r = FetchOne(engine.Url("/metrics"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value(), kBody);
  // localhost falls back to ::1 when 127.0.0.1 refuses.
  const Result<std::string> fallback = FetchOne(engine.Url("/metrics", "localhost"));
  ASSERT_TRUE(fallback.ok()) << fallback.error().message;
}

TEST(LoopbackFetch, OnlyLoopbackUrlsAreFetched) {
  for (const char* url : {"http://10.1.2.3:8000/metrics", "http://example.com/metrics", "http://127.0.0.2:8000/metrics",
                          "http://0.0.0.0:8000/metrics", "http://[::2]:8000/metrics", "http://localhost.evil/metrics",
                          "http://[::ffff:10.0.0.1]:80/"}) {
    const Result<std::string> r = FetchOne(url);
    ASSERT_FALSE(r.ok()) << url;
    EXPECT_THAT(r.error().message, HasSubstr("not on this host")) << url;
    EXPECT_THAT(r.error().message, HasSubstr(url));
  }
  for (const char* url : {"https://127.0.0.1:8000/metrics", "http://user@127.0.0.1/metrics", "ftp://127.0.0.1/",
                          "127.0.0.1:8000/metrics", ""}) {
    EXPECT_FALSE(FetchOne(url).ok()) << url;
  }
  for (const char* url : {"http://127.0.0.1:8000/metrics", "http://[::1]:8000/metrics",
                          "http://[0:0:0:0:0:0:0:1]:8000/metrics", "http://localhost/metrics"}) {
    EXPECT_TRUE(ParseLoopbackUrl(url).ok()) << url;
  }
}

TEST(LoopbackFetch, FailuresSayWhatAndWhere) {
  Engine engine;
  ASSERT_TRUE(engine.ok());
  const Result<std::string> down = FetchOne(engine.Url("/down"));
  ASSERT_FALSE(down.ok());
  EXPECT_EQ(down.error().message, engine.Url("/down") + ": HTTP 503");
  const Result<std::string> missing = FetchOne(engine.Url("/nothing"));
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.error().message, HasSubstr("HTTP 404"));
  const Result<std::string> big = FetchOne(engine.Url("/big"));
  ASSERT_FALSE(big.ok());
  EXPECT_THAT(big.error().message, HasSubstr("larger than"));

  RawPort refusing(false);
  const Result<std::string> refused = FetchOne(refusing.Url("/metrics"));
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message, StartsWith(refusing.Url("/metrics") + ": cannot connect"));
}

TEST(LoopbackFetch, AServerThatNeverAnswersTimesOut) {
  RawPort silent(true);  // accepts into its backlog, never answers
  const Result<std::string> r = FetchOne(silent.Url("/metrics"), 50ms);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, silent.Url("/metrics") + ": no answer within 50 ms (0 bytes received)");
}

TEST(LoopbackFetch, ManyAtOnceOneStuckDoesNotSpoilTheOthers) {
  Engine engine;
  ASSERT_TRUE(engine.ok());
  RawPort silent(true);
  const std::vector<std::string> urls = {engine.Url("/metrics"), silent.Url("/metrics"), engine.Url("/chunked"),
                                         "http://192.0.2.1/metrics", engine.Url("/down")};
  const std::vector<Result<std::string>> r = FetchLoopback(urls, 300ms);
  ASSERT_EQ(r.size(), urls.size());
  ASSERT_TRUE(r[0].ok()) << r[0].error().message;
  EXPECT_EQ(r[0].value(), kBody);
  ASSERT_FALSE(r[1].ok());
  EXPECT_THAT(r[1].error().message, HasSubstr("no answer within 300 ms"));
  ASSERT_TRUE(r[2].ok()) << r[2].error().message;
  EXPECT_EQ(r[2].value(), kBody);
  ASSERT_FALSE(r[3].ok());
  EXPECT_THAT(r[3].error().message, HasSubstr("not on this host"));
  ASSERT_FALSE(r[4].ok());
  EXPECT_THAT(r[4].error().message, HasSubstr("HTTP 503"));
  EXPECT_TRUE(FetchLoopback({}, 10ms).empty());
}

TEST(EngineMetricsRead, ReadsEachEngineAndCombines) {
  Engine a, b;
  ASSERT_TRUE(a.ok() && b.ok());
  const std::vector<EngineReading> r = ReadEngineMetrics({a.Url("/metrics"), b.Url("/metrics"), b.Url("/down")});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].requests_running, 3);
  EXPECT_EQ(r[0].generation_tokens, 77);
  EXPECT_EQ(r[0].error, "");
  EXPECT_EQ(r[1].generation_tokens, 77);
  EXPECT_FALSE(r[2].requests_running.has_value());
  EXPECT_THAT(r[2].error, HasSubstr("HTTP 503"));
  const EngineReading both = CombineReadings({r[0], r[1]});
  EXPECT_EQ(both.requests_running, 6);
  EXPECT_EQ(both.generation_tokens, 154);
  EXPECT_FALSE(CombineReadings(r).generation_tokens.has_value());
}

}  // namespace
}  // namespace ix
