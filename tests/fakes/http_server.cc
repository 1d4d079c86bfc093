#include "http_server.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <chrono>
#include <exception>
#include <system_error>
#include <thread>

#include <strings.h>

namespace ixfake::http {
namespace {

namespace asio = boost::asio;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using boost::beast::error_code;

bool SameName(std::string_view a, std::string_view b) {
  return a.size() == b.size() && ::strncasecmp(a.data(), b.data(), a.size()) == 0;
}

// Reads one request: its header, then its body. A client that sent
// `Expect: 100-continue` waits for "100 Continue" before the body (cpp-httplib
// 0.2x and later send it on bodies over 1 KiB, and wait a second for it);
// uvicorn answers it when the app reads the body, so here too.
void ReadRequest(tcp::socket& socket, boost::beast::flat_buffer& buffer,
                 bhttp::request_parser<bhttp::string_body>& parser, error_code& ec) {
  bhttp::read_header(socket, buffer, parser, ec);
  if (ec || parser.is_done()) return;
  const auto& m = parser.get();
  const auto expect = m[bhttp::field::expect];  // Boost's string_view
  if (m.version() >= 11 && SameName(std::string_view(expect.data(), expect.size()), "100-continue")) {
    bhttp::response<bhttp::empty_body> go_on{bhttp::status::continue_, 11};
    bhttp::write(socket, go_on, ec);
    if (ec) return;
  }
  bhttp::read(socket, buffer, parser, ec);
}

std::string FindHeader(const Headers& headers, std::string_view name) {
  for (const auto& [k, v] : headers) {
    if (SameName(k, name)) return v;
  }
  return "";
}

// Request bodies up to 64 MiB (long prompts), headers up to 1 MiB.
constexpr std::uint64_t kBodyLimit = 64ull << 20;
constexpr std::uint32_t kHeaderLimit = 1u << 20;

// Chunked transfer coding straight onto the socket.
class ChunkSink final : public DataSink {
 public:
  explicit ChunkSink(tcp::socket& s) : socket_(s) {}
  bool write(const char* data, std::size_t size) override {
    if (failed_ || done_) return false;
    if (size == 0) return true;  // an empty chunk would end the body
    error_code ec;
    asio::write(socket_, bhttp::make_chunk(asio::const_buffer(data, size)), ec);
    if (ec) failed_ = true;
    written_ += size;
    return !failed_;
  }
  void done() override {
    if (failed_ || done_) return;
    error_code ec;
    asio::write(socket_, bhttp::make_chunk_last(), ec);
    if (ec) failed_ = true;
    done_ = true;
  }
  bool failed() const { return failed_; }
  bool finished() const { return done_ && !failed_; }
  std::size_t written() const { return written_; }

 private:
  tcp::socket& socket_;
  std::size_t written_ = 0;
  bool failed_ = false;
  bool done_ = false;
};

template <class Message>
void CopyHeaders(const Response& res, Message& m) {
  for (const auto& [k, v] : res.headers) m.insert(k, v);
}

}  // namespace

bool Request::has_header(std::string_view name) const {
  for (const auto& h : headers) {
    if (SameName(h.first, name)) return true;
  }
  return false;
}

std::string Request::get_header_value(std::string_view name) const { return FindHeader(headers, name); }

void Response::set_header(std::string name, std::string value) {
  headers.emplace_back(std::move(name), std::move(value));
}

std::string Response::get_header_value(std::string_view name) const { return FindHeader(headers, name); }

void Response::set_content(std::string content, std::string content_type) {
  body = std::move(content);
  set_header("Content-Type", std::move(content_type));
}

void Response::set_chunked_content_provider(std::string content_type, ContentProvider p, Releaser r) {
  set_header("Content-Type", std::move(content_type));
  provider = std::move(p);
  releaser = std::move(r);
}

struct Server::Impl {
  struct Route {
    std::string method;
    std::string path;
    Handler handler;
  };
  asio::io_context io{1};
  tcp::acceptor acceptor{io};
  std::vector<Route> routes;
  PreRouting pre_routing;
  ErrorHandler error_handler;
  Logger logger;
  std::function<void(int)> socket_options;

  void Dispatch(const Request& req, Response& res) const {
    if (pre_routing) pre_routing(req);
    const Route* route = nullptr;
    for (const auto& r : routes) {
      if (r.method == req.method && r.path == req.path) route = &r;
    }
    if (!route) {
      res.status = 404;
    } else {
      try {
        route->handler(req, res);
      } catch (const std::exception&) {
        res = Response{};
        res.status = 500;  // what uvicorn answers for an exception in the app
        res.set_content("Internal Server Error", "text/plain; charset=utf-8");
      }
    }
    if (res.status >= 400 && error_handler) error_handler(req, res);
  }

  // One connection, requests in order until either side closes.
  void Serve(tcp::socket socket) const {
    error_code ec;
    socket.set_option(tcp::no_delay(true), ec);
    Request peer;
    if (auto ep = socket.remote_endpoint(ec); !ec) {
      peer.remote_addr = ep.address().to_string();
      peer.remote_port = ep.port();
    }
    boost::beast::flat_buffer buffer;
    for (;;) {
      bhttp::request_parser<bhttp::string_body> parser;
      parser.body_limit(kBodyLimit);
      parser.header_limit(kHeaderLimit);
      ReadRequest(socket, buffer, parser, ec);
      if (ec == bhttp::error::end_of_stream || ec == asio::error::eof || ec == asio::error::connection_reset) break;
      if (ec) {
        // Malformed or too large: answer 400 and close, as uvicorn does.
        bhttp::response<bhttp::string_body> bad{bhttp::status::bad_request, 11};
        bad.set(bhttp::field::content_type, "text/plain");
        bad.body() = "Bad Request: " + ec.message() + "\n";
        bad.keep_alive(false);
        bad.prepare_payload();
        bhttp::write(socket, bad, ec);
        break;
      }
      auto& m = parser.get();
      Request req = peer;
      req.method = std::string(m.method_string());
      req.target = std::string(m.target());
      req.path = req.target.substr(0, req.target.find('?'));
      for (const auto& f : m) req.headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
      req.body = std::move(m.body());
      const bool keep_alive = m.keep_alive();
      const unsigned version = m.version();

      Response res;
      Dispatch(req, res);
      bool open = keep_alive;
      if (res.provider) {
        bhttp::response<bhttp::empty_body> head;
        head.version(version);
        head.result(static_cast<unsigned>(res.status));
        CopyHeaders(res, head);
        head.keep_alive(keep_alive);
        head.chunked(true);
        bhttp::response_serializer<bhttp::empty_body> sr{head};
        bhttp::write_header(socket, sr, ec);
        ChunkSink sink(socket);
        bool ok = !ec;
        while (ok && !sink.finished()) {
          ok = res.provider(sink.written(), sink) && !sink.failed();
        }
        if (res.releaser) res.releaser(ok && sink.finished());
        if (!ok) open = false;  // the body is cut: only closing says so
      } else {
        bhttp::response<bhttp::string_body> out;
        out.version(version);
        out.result(static_cast<unsigned>(res.status));
        CopyHeaders(res, out);
        out.body() = res.body;
        out.keep_alive(keep_alive);
        out.prepare_payload();
        bhttp::write(socket, out, ec);
        if (ec) open = false;
      }
      if (logger) logger(req, res);
      if (!open) break;
    }
    socket.shutdown(tcp::socket::shutdown_both, ec);
    socket.close(ec);
  }
};

Server::Server() : impl_(std::make_unique<Impl>()) {}
Server::~Server() = default;

void Server::Get(std::string path, Handler h) { impl_->routes.push_back({"GET", std::move(path), std::move(h)}); }
void Server::Post(std::string path, Handler h) { impl_->routes.push_back({"POST", std::move(path), std::move(h)}); }
void Server::set_pre_routing_handler(PreRouting h) { impl_->pre_routing = std::move(h); }
void Server::set_error_handler(ErrorHandler h) { impl_->error_handler = std::move(h); }
void Server::set_logger(Logger h) { impl_->logger = std::move(h); }
void Server::set_socket_options(std::function<void(int)> f) { impl_->socket_options = std::move(f); }

std::string Server::bind_to_port(const std::string& host, int port) {
  if (port < 0 || port > 65535) return "port " + std::to_string(port) + " is out of range";
  error_code ec;
  tcp::endpoint ep;
  const asio::ip::address addr = asio::ip::make_address(host, ec);
  if (!ec) {
    ep = tcp::endpoint(addr, static_cast<unsigned short>(port));
  } else {
    tcp::resolver resolver(impl_->io);
    auto found = resolver.resolve(host, std::to_string(port), tcp::resolver::passive, ec);
    if (ec || found.empty()) return "cannot resolve host '" + host + "': " + ec.message();
    ep = found.begin()->endpoint();
  }
  tcp::acceptor& a = impl_->acceptor;
  if (a.open(ep.protocol(), ec); ec) return ec.message();
  if (impl_->socket_options) impl_->socket_options(a.native_handle());
  if (a.bind(ep, ec); ec) {
    a.close();
    return ec.message();
  }
  if (a.listen(2048, ec); ec) {
    a.close();
    return ec.message();
  }
  return "";
}

int Server::bound_port() const {
  error_code ec;
  const tcp::endpoint ep = impl_->acceptor.local_endpoint(ec);
  return ec ? 0 : ep.port();
}

void Server::listen_after_bind() {
  const Impl* impl = impl_.get();
  for (;;) {
    error_code ec;
    tcp::socket s = impl_->acceptor.accept(ec);
    if (ec) {
      // EMFILE and the like: wait for connections to close, keep serving.
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    try {
      std::thread([impl, s = std::move(s)]() mutable { impl->Serve(std::move(s)); }).detach();
    } catch (const std::system_error&) {
      // No thread to be had (EAGAIN): this connection is closed unanswered
      // with the lambda that owned it; the next ones may fare better.
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
}

}  // namespace ixfake::http
