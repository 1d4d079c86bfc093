// ixfake::http::Server: the fake engine's HTTP/1.1 server, on Boost.Beast
// (header-only; plain HTTP, no TLS), with the shape of cpp-httplib's Server
// so the handlers read the same as the router's and the client's.
//
// Why not cpp-httplib here: Debian's libcpp-httplib.so is built with OpenSSL,
// and loading it (libssl, libcrypto, brotli, libstdc++) costs ~5 ms before
// main() on every exec; the fake engine stands for an engine that is ready
// at once in the step set-up benchmark, which would count those 5 ms as the
// plugin's. With this server and a static C++ runtime it starts in ~1 ms.
// The router and the client keep cpp-httplib (their start is not timed).
//
// Model: one thread accepts; each connection gets a thread of its own
// (keep-alive, requests in order), started with the signal mask of the
// caller. No Beast type appears here, so users compile quickly.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ixfake::http {

using Headers = std::vector<std::pair<std::string, std::string>>;

// A parsed request. Header names compare case-insensitively.
struct Request {
  std::string method;  // "GET"
  std::string target;  // as sent: "/v1/models?x=1"
  std::string path;    // target without the query: "/v1/models"
  Headers headers;
  std::string body;
  std::string remote_addr;
  int remote_port = 0;

  bool has_header(std::string_view name) const;
  // The first value of `name`, "" when absent.
  std::string get_header_value(std::string_view name) const;
};

// What a streamed response writes into; write() is false once the client is
// gone, and done() ends the body.
class DataSink {
 public:
  virtual ~DataSink() = default;
  virtual bool write(const char* data, std::size_t size) = 0;
  virtual void done() = 0;
};

// A response: a whole body (set_content), or a chunked stream whose provider
// is called with the offset written so far until it calls sink.done() or
// returns false (which drops the connection). The releaser, when set, runs
// once at the end with whether the stream completed.
struct Response {
  using ContentProvider = std::function<bool(std::size_t offset, DataSink& sink)>;
  using Releaser = std::function<void(bool success)>;

  int status = 200;
  Headers headers;
  std::string body;
  ContentProvider provider;
  Releaser releaser;

  void set_header(std::string name, std::string value);
  std::string get_header_value(std::string_view name) const;
  void set_content(std::string content, std::string content_type);
  void set_chunked_content_provider(std::string content_type, ContentProvider p, Releaser r = {});
};

class Server {
 public:
  using Handler = std::function<void(const Request&, Response&)>;
  // Sees each request before routing (the fake's hang switch holds it here).
  using PreRouting = std::function<void(const Request&)>;
  // After routing, for a status >= 400 (the "no route" 404 included).
  using ErrorHandler = std::function<void(const Request&, Response&)>;
  // After the response went out.
  using Logger = std::function<void(const Request&, const Response&)>;

  Server();
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  void Get(std::string path, Handler h);
  void Post(std::string path, Handler h);
  void set_pre_routing_handler(PreRouting h);
  void set_error_handler(ErrorHandler h);
  void set_logger(Logger h);
  // Runs on the listening socket after it is created, before bind().
  void set_socket_options(std::function<void(int fd)> f);

  // Binds and listens (backlog 2048, as uvicorn); "" on success, else why.
  // Port 0 picks one: see bound_port().
  std::string bind_to_port(const std::string& host, int port);
  int bound_port() const;
  // Accepts until the process ends (the fakes end by exiting).
  void listen_after_bind();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ixfake::http
