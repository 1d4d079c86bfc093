#include "http_server.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace ixfake::http {
namespace {

// A server on an ephemeral port of 127.0.0.1, accepting on a thread of its
// own. listen_after_bind never returns, so the server is leaked on purpose
// (the test process ends with it).
Server& Start(const std::function<void(Server&)>& setup, int* port) {
  auto* s = new Server;
  setup(*s);
  const std::string err = s->bind_to_port("127.0.0.1", 0);
  EXPECT_EQ(err, "");
  *port = s->bound_port();
  EXPECT_GT(*port, 0);
  std::thread([s] { s->listen_after_bind(); }).detach();
  return *s;
}

// A server whose GET `path` streams from `provider`; its releaser stores 1
// (completed) or 0 (cut) into `released`. Returns the port.
int StartStream(const std::string& path, Response::ContentProvider provider,
                const std::shared_ptr<std::atomic<int>>& released) {
  int port = 0;
  Start(
      [=](Server& s) {
        s.Get(path, [=](const Request&, Response& res) {
          res.set_chunked_content_provider("text/event-stream", provider,
                                           [released](bool ok) { released->store(ok ? 1 : 0); });
        });
      },
      &port);
  return port;
}

// The logger and the releaser run on the connection's thread after the
// client has its answer: waits up to 1 s for `done` to hold.
void WaitFor(const std::function<bool()>& done) {
  for (int i = 0; i < 200 && !done(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

// A connection to 127.0.0.1:`port` whose reads give up after 2 s.
int ConnectLoopback(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  timeval tv{2, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

// Sends `bytes` on `fd`, then reads what comes until `until` is in it, the
// server closes, or 2 s pass.
std::string SendAndRead(int fd, const std::string& bytes, const std::string& until = "") {
  EXPECT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  std::string out;
  char buf[4096];
  while (until.empty() || out.find(until) == std::string::npos) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// Sends raw bytes and reads until the server closes (or 2 s pass).
std::string RawExchange(int port, const std::string& bytes) {
  const int fd = ConnectLoopback(port);
  std::string out = SendAndRead(fd, bytes);
  ::close(fd);
  return out;
}

TEST(HttpServer, RoutesByMethodAndPathIgnoringTheQuery) {
  int port = 0;
  Start(
      [](Server& s) {
        s.Get("/v1/models", [](const Request& req, Response& res) {
          res.set_content("models " + req.target + " " + req.get_header_value("x-session-id"), "application/json");
        });
        s.Post("/v1/completions", [](const Request& req, Response& res) {
          res.status = 201;
          res.set_header("X-Served-By-Rank", "3");
          res.set_content("echo:" + req.body, "text/plain");
        });
      },
      &port);
  httplib::Client cli("127.0.0.1", port);
  auto r = cli.Get("/v1/models?limit=1", httplib::Headers{{"X-Session-ID", "s-1"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "models /v1/models?limit=1 s-1");
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");

  auto p = cli.Post("/v1/completions", std::string(100000, 'x'), "application/json");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->status, 201);
  EXPECT_EQ(p->get_header_value("X-Served-By-Rank"), "3");
  EXPECT_EQ(p->body, "echo:" + std::string(100000, 'x'));

  // A known path with another method is not routed.
  auto wrong = cli.Post("/v1/models", "", "application/json");
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 404);
}

TEST(HttpServer, ErrorHandlerFillsEmptyErrorsAndLoggerSeesEveryResponse) {
  int port = 0;
  auto logged = std::make_shared<std::atomic<int>>(0);
  Start(
      [logged](Server& s) {
        s.Get("/teapot", [](const Request&, Response& res) {
          res.status = 418;
          res.set_content("short and stout", "text/plain");
        });
        s.set_error_handler([](const Request& req, Response& res) {
          if (res.body.empty()) res.set_content("{\"detail\":\"Not Found\",\"path\":\"" + req.path + "\"}", "application/json");
        });
        s.set_logger([logged](const Request&, const Response&) { logged->fetch_add(1); });
      },
      &port);
  httplib::Client cli("127.0.0.1", port);
  auto missing = cli.Get("/nope");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(missing->body, R"({"detail":"Not Found","path":"/nope"})");
  auto teapot = cli.Get("/teapot");
  ASSERT_TRUE(teapot);
  EXPECT_EQ(teapot->status, 418);
  EXPECT_EQ(teapot->body, "short and stout");
  WaitFor([&] { return logged->load() >= 2; });
  EXPECT_EQ(logged->load(), 2);
}

TEST(HttpServer, KeepAliveServesSeveralRequestsOnOneConnection) {
  int port = 0;
  auto peers = std::make_shared<std::vector<int>>();
  auto mu = std::make_shared<std::mutex>();
  Start(
      [peers, mu](Server& s) {
        s.Get("/health", [peers, mu](const Request& req, Response&) {
          std::lock_guard<std::mutex> l(*mu);
          peers->push_back(req.remote_port);
        });
      },
      &port);
  httplib::Client cli("127.0.0.1", port);
  cli.set_keep_alive(true);
  for (int i = 0; i < 5; ++i) {
    auto r = cli.Get("/health");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "");
  }
  std::lock_guard<std::mutex> l(*mu);
  ASSERT_EQ(peers->size(), 5u);
  for (int p : *peers) EXPECT_EQ(p, peers->front());  // one client port: one connection
}

TEST(HttpServer, ChunkedStreamArrivesWholeAndReleaserSeesSuccess) {
  auto released = std::make_shared<std::atomic<int>>(-1);
  const int port = StartStream(
      "/stream",
      [](size_t offset, DataSink& sink) {
        // Called again until done(): one event per call, three in all.
        const std::string frame = "data: " + std::to_string(offset) + "\n\n";
        if (!sink.write(frame.data(), frame.size())) return false;
        if (offset > 0) {
          const std::string last = "data: [DONE]\n\n";
          sink.write(last.data(), last.size());
          sink.done();
        }
        return true;
      },
      released);
  httplib::Client cli("127.0.0.1", port);
  auto r = cli.Get("/stream");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Transfer-Encoding"), "chunked");
  EXPECT_EQ(r->body, "data: 0\n\ndata: 9\n\ndata: [DONE]\n\n");
  WaitFor([&] { return released->load() >= 0; });
  EXPECT_EQ(released->load(), 1);
}

TEST(HttpServer, ProviderFailureCutsTheConnectionAndReleaserSeesFailure) {
  auto released = std::make_shared<std::atomic<int>>(-1);
  const int port = StartStream(
      "/cut",
      [](size_t, DataSink& sink) {
        sink.write("data: a\n\n", 9);
        return false;
      },
      released);
  const std::string got = RawExchange(port, "GET /cut HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_NE(got.find("200 OK"), std::string::npos) << got;
  EXPECT_NE(got.find("data: a"), std::string::npos) << got;
  EXPECT_EQ(got.find("\r\n0\r\n\r\n"), std::string::npos) << "a cut stream must not end like a complete one: " << got;
  WaitFor([&] { return released->load() >= 0; });
  EXPECT_EQ(released->load(), 0);
}

TEST(HttpServer, MalformedRequestGets400AndHttp10Closes) {
  int port = 0;
  Start([](Server& s) { s.Get("/health", [](const Request&, Response&) {}); }, &port);
  const std::string bad = RawExchange(port, "this is not http\r\n\r\n");
  EXPECT_EQ(bad.rfind("HTTP/1.1 400", 0), 0u) << bad;
  // HTTP/1.0 without keep-alive: answered, then closed (RawExchange returns).
  const std::string old = RawExchange(port, "GET /health HTTP/1.0\r\n\r\n");
  EXPECT_EQ(old.rfind("HTTP/1.0 200", 0), 0u) << old;
}

// cpp-httplib's client (0.2x and later) sends a body over 1 KiB only after
// "100 Continue", or after waiting a second for it.
TEST(HttpServer, ExpectContinueIsAnsweredBeforeTheBody) {
  int port = 0;
  Start([](Server& s) { s.Post("/echo", [](const Request& req, Response& res) { res.set_content(req.body, "text/plain"); }); },
        &port);
  const int fd = ConnectLoopback(port);
  const std::string go_on = SendAndRead(
      fd, "POST /echo HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\nConnection: close\r\n\r\n",
      "\r\n\r\n");
  EXPECT_EQ(go_on, "HTTP/1.1 100 Continue\r\n\r\n");
  const std::string answer = SendAndRead(fd, "hello");
  ::close(fd);
  EXPECT_EQ(answer.rfind("HTTP/1.1 200", 0), 0u) << answer;
  EXPECT_NE(answer.find("\r\n\r\nhello"), std::string::npos) << answer;
}

TEST(HttpServer, BindReportsAPortInUse) {
  int port = 0;
  Start([](Server&) {}, &port);
  Server second;
  const std::string err = second.bind_to_port("127.0.0.1", port);
  EXPECT_NE(err.find("in use"), std::string::npos) << err;
  EXPECT_NE(Server().bind_to_port("127.0.0.1", 70000), "");
}

}  // namespace
}  // namespace ixfake::http
