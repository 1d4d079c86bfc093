#include "node_agent/metrics_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "node_agent/gpu_sample_test_util.h"
#include "node_agent/promtool_check.h"
#include "tests/support/http_test_server.h"

namespace ix {
namespace {

using ::testing::HasSubstr;
using testing_http::RawPort;

AgentMetrics Sample(uint64_t received) {
  AgentMetrics m;
  m.node.numa = {{0, 1000, 500, 700}};
  m.node.shm = ShmSpace{"/dev/shm", 4096, 2048, 2048};
  m.gpus.state = "ok";
  m.gpus.gpus = {test::FullGpu(0)};
  StepMetrics s;
  s.step = "77.0";
  s.processes = 3;
  s.requests_running = 2;
  s.generation_tokens_total = 1000;
  m.steps = {s};
  m.counters.events_received_total = received;
  m.counters.delivery_up = true;
  return m;
}

// A started server on a free loopback port.
class MetricsServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const Status started = server.Start("127.0.0.1:0");
    ASSERT_TRUE(started.ok()) << started.error().message;
    ASSERT_GT(server.port(), 0);
  }
  httplib::Result Get(const std::string& path) {
    httplib::Client client("127.0.0.1", server.port());
    client.set_connection_timeout(5);
    client.set_read_timeout(5);
    return client.Get(path.c_str());
  }

  MetricsServer server;
};

TEST_F(MetricsServerTest, ServesThePublishedSnapshotAsPrometheusText) {
  server.Publish(Sample(42));
  httplib::Result res = Get("/metrics");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(res->body, RenderPrometheusText(Sample(42)));
  EXPECT_THAT(res->body, HasSubstr("ix_agent_events_received_total 42\n"));
  EXPECT_EQ(server.scrapes(), 1u);

  const test::PromtoolResult check = test::PromtoolCheckMetrics(res->body);
  ASSERT_TRUE(check.ran) << check.output;
  EXPECT_EQ(check.exit_code, 0) << check.output;
  EXPECT_EQ(check.output, "");
}

TEST_F(MetricsServerTest, ServesTheLatestSnapshot) {
  server.Publish(Sample(1));
  server.Publish(Sample(2));
  httplib::Result res = Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_THAT(res->body, HasSubstr("ix_agent_events_received_total 2\n"));
  server.Publish(Sample(3));
  res = Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_THAT(res->body, HasSubstr("ix_agent_events_received_total 3\n"));
}

TEST_F(MetricsServerTest, BeforeTheFirstPublishTheTextIsEmptyButValid) {
  httplib::Result res = Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "");
  const test::PromtoolResult check = test::PromtoolCheckMetrics(res->body);
  ASSERT_TRUE(check.ran) << check.output;
  EXPECT_EQ(check.exit_code, 0) << check.output;
}

TEST_F(MetricsServerTest, OtherPathsAndMethodsAreRefused) {
  for (const char* path : {"/", "/metrics/", "/metricsx", "/../metrics", "/healthz"}) {
    httplib::Result res = Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 404) << path;
  }
  httplib::Client client("127.0.0.1", server.port());
  httplib::Result post = client.Post("/metrics", std::string(1000, 'x'), "text/plain");
  if (post) {  // a closed connection is a refusal too
    EXPECT_GE(post->status, 400);
  }
  EXPECT_EQ(server.scrapes(), 0u);
  // Still serving afterwards.
  httplib::Result res = Get("/metrics?x=1");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

TEST_F(MetricsServerTest, ManyScrapersAtOnceWhileTheLoopPublishes) {
  std::atomic<int> ok{0};
  std::vector<std::thread> scrapers;
  for (int i = 0; i < 12; ++i) {
    scrapers.emplace_back([&] {
      for (int k = 0; k < 5; ++k) {
        httplib::Result res = Get("/metrics");
        if (res && res->status == 200) ++ok;
      }
    });
  }
  for (uint64_t n = 0; n < 200; ++n) server.Publish(Sample(n));
  for (std::thread& t : scrapers) t.join();
  EXPECT_EQ(ok, 60);
  EXPECT_EQ(server.scrapes(), 60u);
}

TEST_F(MetricsServerTest, StopEndsServingAndIsIdempotent) {
  const uint16_t port = server.port();
  server.Stop();
  server.Stop();
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(1);
  EXPECT_FALSE(client.Get("/metrics"));
}

TEST_F(MetricsServerTest, StopReturnsWithAClientThatNeverFinishesItsRequest) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(server.port());
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  const char partial[] = "GET /metr";
  ASSERT_EQ(::send(fd, partial, sizeof partial - 1, MSG_NOSIGNAL), static_cast<ssize_t>(sizeof partial - 1));
  server.Stop();  // returns once the read timeout drops the client
  ::close(fd);
}

TEST(MetricsServer, ABusyPortIsAnErrorNamingTheAddress) {
  RawPort taken(true);
  MetricsServer server;
  const std::string listen = "127.0.0.1:" + std::to_string(taken.port());
  const Status started = server.Start(listen);
  ASSERT_FALSE(started.ok());
  EXPECT_THAT(started.error().message, HasSubstr("metrics-listen " + listen + ": cannot listen"));
  EXPECT_EQ(server.port(), 0);
  server.Stop();  // nothing to stop
}

TEST(MetricsServer, ASecondServerOnTheSamePortIsAnError) {
  MetricsServer first;
  ASSERT_TRUE(first.Start("127.0.0.1:0").ok());
  MetricsServer second;
  const std::string listen = "127.0.0.1:" + std::to_string(first.port());
  const Status started = second.Start(listen);
  ASSERT_FALSE(started.ok());
  EXPECT_THAT(started.error().message, HasSubstr(listen));
}

TEST(MetricsServer, StartTwiceIsAnError) {
  MetricsServer server;
  ASSERT_TRUE(server.Start("127.0.0.1:0").ok());
  const Status again = server.Start("127.0.0.1:0");
  ASSERT_FALSE(again.ok());
  EXPECT_THAT(again.error().message, HasSubstr("already started"));
}

TEST(MetricsServer, Ipv6) {
  MetricsServer server;
  const Status started = server.Start("[::1]:0");
  if (!started.ok()) GTEST_SKIP() << "no IPv6 loopback here: " << started.error().message;
  server.Publish(Sample(5));
  httplib::Client client("::1", server.port());
  httplib::Result res = client.Get("/metrics");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_THAT(res->body, HasSubstr("ix_agent_events_received_total 5\n"));
}

TEST(MetricsServer, BadListenAddresses) {
  for (const char* listen : {"", "9477", "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1", "localhost:9477",
                             "::1:9477", "[::1:9477", "[127.0.0.1]:9477", "127.0.0.1:94x7"}) {
    MetricsServer server;
    const Status started = server.Start(listen);
    ASSERT_FALSE(started.ok()) << listen;
    EXPECT_THAT(started.error().message, HasSubstr("metrics-listen '" + std::string(listen) + "'"));
    EXPECT_THAT(started.error().message, HasSubstr("expected ADDR:PORT"));
  }
  const Result<ListenAddress> v4 = ParseListenAddress("127.0.0.1:9477");
  ASSERT_TRUE(v4.ok());
  EXPECT_EQ(v4.value().host, "127.0.0.1");
  EXPECT_EQ(v4.value().port, 9477);
  const Result<ListenAddress> v6 = ParseListenAddress("[::]:80");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6.value().host, "::");
  EXPECT_EQ(v6.value().port, 80);
}

}  // namespace
}  // namespace ix
