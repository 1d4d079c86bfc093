#include "submitter/collector/collector.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <mutex>

#include "core/base/sha256.h"
#include "tests/support/test.h"

namespace ix {
namespace {

const std::string kToken = "c0ll3ct0r-t0k3n-0123456789abcdef";

std::string EventJson(const std::string& id, const std::string& extra = "") {
  return R"({"id":")" + id + R"(","event":"started","step":"9.0","time":12.5,"sweep":"sw-1","entry":2)" + extra + "}";
}

std::string Batch(int from, int to) {
  std::string body = "[";
  for (int i = from; i < to; ++i) body += (i > from ? "," : "") + EventJson("9.0:" + std::to_string(i));
  return body + "]";
}

// A request written by hand on a fresh connection, and the status line of
// the answer (what httplib's client cannot send: Expect, chunked).
std::string RawStatusLine(int port, const std::string& request) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string got;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
    char buf[4096];
    ssize_t n;
    while (got.find("\r\n") == std::string::npos && (n = ::read(fd, buf, sizeof buf)) > 0) got.append(buf, n);
  }
  ::close(fd);
  return got.substr(0, got.find("\r\n"));
}

class CollectorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CollectorOptions o;
    o.db_path = dir_.path() + "/ix.db";
    o.token = kToken;
    o.on_event = [this](const StoredEvent& e) {
      std::lock_guard<std::mutex> lock(mu_);
      seen_.push_back(e);
    };
    o.on_result = [this](const std::string& sweep, int64_t entry, const std::string& name,
                         const std::string& content) {
      std::lock_guard<std::mutex> lock(mu_);
      results_.push_back(sweep + "/" + std::to_string(entry) + "/" + name + "=" + content);
    };
    o.log = [this](const std::string& line) {
      std::lock_guard<std::mutex> lock(mu_);
      log_.push_back(line);
    };
    Result<std::unique_ptr<Collector>> c = Collector::Start(std::move(o));
    ASSERT_TRUE(c) << c.error().message;
    collector_ = std::move(c).value();
    ASSERT_GT(collector_->port(), 0);
    client_ = std::make_unique<httplib::Client>("127.0.0.1", collector_->port());
  }

  httplib::Result Post(const std::string& body, const std::string& token = kToken) {
    return client_->Post("/v1/events", {{"Authorization", "Bearer " + token}}, body, "application/json");
  }
  httplib::Result Put(const std::string& path, const std::string& body, const std::string& sha) {
    return client_->Put(path.c_str(), {{"Authorization", "Bearer " + kToken}, {"X-Content-SHA256", sha}}, body,
                        "application/octet-stream");
  }
  size_t Stored() {
    Result<CollectorStore> s = CollectorStore::Open(dir_.path() + "/ix.db");
    EXPECT_TRUE(s);
    return s ? s.value().ListEvents(std::nullopt).value().size() : 0;
  }
  size_t Seen() {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_.size();
  }
  size_t Logged() {
    std::lock_guard<std::mutex> lock(mu_);
    return log_.size();
  }

  test::TempDir dir_{"ix-collector"};
  std::mutex mu_;
  std::vector<StoredEvent> seen_;
  std::vector<std::string> results_;
  std::vector<std::string> log_;
  // Last, so destroyed first: the callbacks above outlive the collector.
  std::unique_ptr<Collector> collector_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(CollectorTest, HealthNeedsNoToken) {
  httplib::Result r = client_->Get("/v1/health");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, R"({"status":"ok"})");
}

TEST_F(CollectorTest, StoresEventsOnceAndCallsBackForNewOnes) {
  httplib::Result r = Post(Batch(0, 3));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, R"({"stored":3,"duplicates":0})");
  r = Post(Batch(1, 5));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, R"({"stored":2,"duplicates":2})");
  EXPECT_EQ(Stored(), 5u);
  std::lock_guard<std::mutex> lock(mu_);
  ASSERT_EQ(seen_.size(), 5u);
  EXPECT_EQ(seen_[3].id, "9.0:3");
  EXPECT_EQ(seen_[3].sweep, "sw-1");
  EXPECT_EQ(seen_[3].entry, 2);
  EXPECT_EQ(seen_[3].body, EventJson("9.0:3"));
  EXPECT_GT(seen_[3].received, 0);
}

TEST_F(CollectorTest, AWrongTokenIs401AndStoresNothing) {
  for (const std::string& token : {std::string("wrong-token-0123456789"), std::string()}) {
    httplib::Result r = token.empty() ? client_->Post("/v1/events", Batch(0, 2), "application/json")
                                      : Post(Batch(0, 2), token);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 401);
    EXPECT_EQ(r->get_header_value("WWW-Authenticate"), "Bearer");
    EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");
  }
  EXPECT_EQ(Stored(), 0u);
  EXPECT_EQ(Seen(), 0u);
  // httplib logs a request after its answer went out, on the server's
  // thread: the line can come after the client has read the 401.
  ASSERT_TRUE(test::WaitUntil([this] { return Logged() >= 2; }, std::chrono::seconds(10))) << Logged();
  std::lock_guard<std::mutex> lock(mu_);
  EXPECT_EQ(log_.size(), 2u);
  EXPECT_EQ(log_[0].rfind("401 POST /v1/events from 127.0.0.1: ", 0), 0u) << log_[0];
  for (const std::string& line : log_) EXPECT_EQ(line.find(kToken), std::string::npos);
}

TEST_F(CollectorTest, AnInvalidBatchIs400AndStoresNothing) {
  const std::pair<std::string, std::string> cases[] = {
      {"[{\"id\":", "body: not valid JSON"},
      {"[" + EventJson("9.0:1") + "," + EventJson("9.0:2", ",\"sweep\":\"../x\"") + "]", "events[1]: "},
      {"[" + EventJson("9.0:1") + "," + EventJson("bad") + "]", "events[1]: id: "},
  };
  for (const auto& [body, want] : cases) {
    httplib::Result r = Post(body);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400);
    EXPECT_NE(r->body.find(R"({"error":")" + want), std::string::npos) << r->body;
  }
  EXPECT_EQ(Stored(), 0u);
}

TEST_F(CollectorTest, AnOversizedBodyIs413) {
  std::string body = Batch(0, 1);
  body.insert(1, std::string(kMaxEventsBodyBytes, ' '));
  httplib::Result r = Post(body);
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 413);
  EXPECT_EQ(Stored(), 0u);
  // The collector still answers on a new connection.
  EXPECT_EQ(Post(Batch(0, 1))->status, 200);
}

TEST_F(CollectorTest, ResultFilesAreCheckedAndStored) {
  const std::string content = "{\"throughput\": 1234.5}\n";
  httplib::Result r = Put("/v1/results/sw-1/2/result.json", content, Sha256Hex(content));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 201) << r->body;
  EXPECT_NE(r->body.find("\"outcome\":\"created\""), std::string::npos);
  r = Put("/v1/results/sw-1/2/result.json", content, Sha256Hex(content));
  EXPECT_EQ(r->status, 200);
  EXPECT_NE(r->body.find("\"outcome\":\"unchanged\""), std::string::npos);
  r = Put("/v1/results/sw-1/2/other.json", content, Sha256Hex("something else"));
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("X-Content-SHA256: does not match the body"), std::string::npos);
  for (const char* path : {"/v1/results/sw-1/2/..", "/v1/results/sw-1/2/%2e%2e", "/v1/results/sw-1/2/a%2Fb",
                           "/v1/results/../2/x", "/v1/results/sw-1/2/../../events", "/v1/results/sw-1/2/a/b/c",
                           "/v1/results/sw-1/2/a/.."}) {
    r = Put(path, content, Sha256Hex(content));
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 400) << path << " " << r->body;
  }
  // One directory level (an agentic entry's aiperf_artifacts/).
  r = Put("/v1/results/sw-1/2/aiperf_artifacts/profile_export.jsonl", content, Sha256Hex(content));
  EXPECT_EQ(r->status, 201) << r->body;
  Result<CollectorStore> s = CollectorStore::Open(dir_.path() + "/ix.db");
  ASSERT_TRUE(s);
  ASSERT_EQ(s.value().ListResults(std::nullopt).value().size(), 2u);
  EXPECT_EQ(*s.value().ReadResult(ResultTarget{"sw-1", 2, "result.json"}).value(), content);
  std::lock_guard<std::mutex> lock(mu_);
  EXPECT_EQ(results_, (std::vector<std::string>{"sw-1/2/result.json=" + content,
                                                "sw-1/2/aiperf_artifacts/profile_export.jsonl=" + content}))
      << "once: the repeat is unchanged";
}

TEST_F(CollectorTest, RoutesAndMethods) {
  httplib::Headers auth{{"Authorization", "Bearer " + kToken}};
  EXPECT_EQ(client_->Get("/v1/nothing", auth)->status, 404);
  EXPECT_EQ(client_->Get("/v1/nothing")->status, 401) << "no route is told without the token";
  httplib::Result r = client_->Get("/v1/events", auth);
  EXPECT_EQ(r->status, 405);
  EXPECT_EQ(r->get_header_value("Allow"), "POST");
  EXPECT_EQ(client_->Post("/v1/%65vents", auth, Batch(0, 1), "application/json")->status, 404);
  EXPECT_EQ(client_->Post("/v1/events", auth, Batch(0, 1), "text/plain")->status, 415);
  EXPECT_EQ(client_->Delete("/v1/events", auth)->status, 405);
  EXPECT_EQ(Stored(), 0u);
}

TEST_F(CollectorTest, RefusesFromTheHeadBeforeTheBody) {
  const int port = collector_->port();
  // Asked for 100-continue without the token: refused; the body never comes.
  EXPECT_EQ(RawStatusLine(port, "POST /v1/events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                "Content-Length: 100000\r\nExpect: 100-continue\r\n\r\n"),
            "HTTP/1.1 401 Unauthorized");
  EXPECT_EQ(RawStatusLine(port, "POST /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + kToken +
                                    "\r\nContent-Type: application/json\r\nContent-Length: 99999999\r\n"
                                    "Expect: 100-continue\r\n\r\n"),
            "HTTP/1.1 413 Payload Too Large");
  EXPECT_EQ(RawStatusLine(port, "POST /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + kToken +
                                    "\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                                    "5\r\n[]   \r\n0\r\n\r\n"),
            "HTTP/1.1 411 Length Required");
  EXPECT_EQ(RawStatusLine(port, "POST /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + kToken +
                                    "\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
                                    "Expect: 100-continue\r\n\r\n"),
            "HTTP/1.1 100 Continue");
}

TEST_F(CollectorTest, StopIsPromptAndSafeTwice) {
  ASSERT_EQ(Post(Batch(0, 1))->status, 200);  // leaves a keep-alive connection open
  collector_->Stop();
  collector_->Stop();
  httplib::Client fresh("127.0.0.1", collector_->port());
  EXPECT_FALSE(fresh.Get("/v1/health")) << "nothing listens after Stop";
  const size_t seen = Seen();
  EXPECT_EQ(seen, 1u);
}

TEST(CollectorStart, RefusesBadOptions) {
  test::TempDir dir("ix-collector");
  CollectorOptions o;
  o.db_path = dir.path() + "/ix.db";
  o.token = "short";
  Result<std::unique_ptr<Collector>> c = Collector::Start(o);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().message.rfind("collector token: ", 0), 0u) << c.error().message;
  o.token = kToken;
  o.host = "no such host.invalid";
  c = Collector::Start(o);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().message.rfind("listen address no such host.invalid: ", 0), 0u) << c.error().message;
  o.host = "127.0.0.1";
  Result<std::unique_ptr<Collector>> first = Collector::Start(o);
  ASSERT_TRUE(first) << first.error().message;
  o.port = first.value()->port();
  c = Collector::Start(o);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().message, "cannot listen on 127.0.0.1:" + std::to_string(o.port) + ": Address already in use");
}

}  // namespace
}  // namespace ix
