#include "submitter/collector/collector.h"

#include <fcntl.h>
#include <netdb.h>
#include <sys/socket.h>

#include <httplib.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>

#include "core/base/http_task_queue.h"
#include "core/base/json_text.h"
#include "core/base/text.h"
#include "core/base/sha256.h"
#include "submitter/collector/bounded_work_queue.h"
#include "submitter/collector/request_gate.h"
#include "submitter/collector/token_file.h"

namespace ix {

// What the server, its threads and a detached listener share; kept alive
// by the listener thread until it ends, so a Stop() past its deadline
// leaves nothing dangling.
struct Collector::State {
  explicit State(CollectorOptions o, CollectorStore s) : options(std::move(o)), store(std::move(s)) {}

  CollectorOptions options;
  httplib::Server server;
  int port = 0;
  int listen_fd = -1;  // seen in the socket-options hook, to widen the backlog

  std::mutex store_mu;  // the store is one connection
  CollectorStore store;

  std::mutex callback_mu;  // callbacks one at a time, none after Stop
  bool callbacks_off = false;

  std::mutex queue_mu;  // the work queue httplib owns, while it exists
  BoundedWorkQueue* queue = nullptr;

  std::mutex done_mu;
  std::condition_variable done_cv;
  bool listener_done = false;
};

namespace {

using State = Collector::State;

// httplib's TaskQueue over a BoundedWorkQueue, registered in the state so
// Stop() can release an accept thread blocked on a full queue.
class QueueAdapter : public HttpTaskQueue {
 public:
  explicit QueueAdapter(State* s) : s_(s), q_(s->options.threads, s->options.threads * 4) {
    std::lock_guard<std::mutex> lock(s_->queue_mu);
    s_->queue = &q_;
  }
  ~QueueAdapter() override {
    q_.Shutdown();
    std::lock_guard<std::mutex> lock(s_->queue_mu);
    s_->queue = nullptr;
  }
  void shutdown() override { q_.Shutdown(); }

 private:
  void Submit(std::function<void()> fn) override { q_.Enqueue(std::move(fn)); }

  State* s_;
  BoundedWorkQueue q_;
};

double WallSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string ErrorJson(const std::string& message) {
  return JsonText(false, [&](auto& w) {
    w.StartObject();
    w.Key("error");
    w.String(message.c_str(), static_cast<rapidjson::SizeType>(message.size()));
    w.EndObject();
  });
}

void Answer(httplib::Response& res, const Refusal& r) {
  res.status = r.status;
  res.set_content(ErrorJson(r.message), "application/json");
  if (r.authenticate) res.set_header("WWW-Authenticate", "Bearer");
  if (!r.allow.empty()) res.set_header("Allow", r.allow);
}

GateDecision Gate(const State& s, const httplib::Request& req) {
  RequestHead head{req.method, req.target, {}};
  head.headers.reserve(req.headers.size());
  for (const auto& [name, value] : req.headers) {
    // httplib adds these itself; they are not the client's.
    if (name == "REMOTE_ADDR" || name == "REMOTE_PORT" || name == "LOCAL_ADDR" || name == "LOCAL_PORT") continue;
    head.headers.emplace_back(name, value);
  }
  return CheckRequestHead(head, s.options.token);
}

// A line for the log: control bytes of the client's target escaped.
// A stranger's bytes in a log line: ASCII only.
std::string LogText(const std::string& s) { return Printable(s, true); }

// What httplib refused by itself, for its error body.
std::string StatusText(int status) {
  switch (status) {
    case 400: return "malformed HTTP request";
    case 413: return "body too large";
    case 414: return "request target too long";
    case 415: return "Content-Encoding not supported";
    default: return "HTTP status " + std::to_string(status);
  }
}

void ServeEvents(State& s, const httplib::Request& req, httplib::Response& res) {
  Result<std::vector<ValidEvent>> batch = ParseEventBatch(req.body);
  if (!batch) return Answer(res, Refusal{400, batch.error().message, false, ""});
  const std::vector<ValidEvent>& events = batch.value();
  const double now = WallSeconds();
  std::unique_lock<std::mutex> store_lock(s.store_mu);
  Result<IngestCounts> counts = s.store.IngestEvents(events, now);
  if (!counts) return Answer(res, Refusal{500, "cannot store the events: " + counts.error().message, false, ""});
  // Taken before the store is let go, so callbacks follow commit order.
  std::unique_lock<std::mutex> callback_lock(s.callback_mu);
  store_lock.unlock();
  res.set_content("{\"stored\":" + std::to_string(counts.value().stored) +
                      ",\"duplicates\":" + std::to_string(counts.value().duplicates) + "}",
                  "application/json");
  if (!s.options.on_event || s.callbacks_off) return;
  for (size_t i : counts.value().new_events) {
    const ValidEvent& e = events[i];
    s.options.on_event(StoredEvent{e.id, e.sweep, e.entry, e.step, e.event, e.node, e.time, now, e.body});
  }
}

std::string ResultJson(const Admitted& a, size_t size, const char* outcome) {
  return JsonText(false, [&](auto& w) {
    w.StartObject();
    w.Key("sweep");
    w.String(a.result.sweep.c_str());
    w.Key("entry");
    w.Int64(a.result.entry);
    w.Key("name");
    w.String(a.result.name.c_str());
    w.Key("sha256");
    w.String(a.sha256.c_str());
    w.Key("size");
    w.Uint64(size);
    w.Key("outcome");
    w.String(outcome);
    w.EndObject();
  });
}

void ServeResult(State& s, const Admitted& a, const httplib::Request& req, httplib::Response& res) {
  const std::string actual = Sha256Hex(req.body);
  if (actual != a.sha256) {
    return Answer(res, Refusal{400, "X-Content-SHA256: does not match the body (whose SHA-256 is " + actual + ")",
                               false, ""});
  }
  std::unique_lock<std::mutex> store_lock(s.store_mu);
  Result<PutOutcome> put = s.store.PutResult(a.result, a.sha256, req.body, WallSeconds());
  if (!put) return Answer(res, Refusal{500, "cannot store the result file: " + put.error().message, false, ""});
  std::unique_lock<std::mutex> callback_lock(s.callback_mu);
  store_lock.unlock();
  const PutOutcome o = put.value();
  res.status = o == PutOutcome::kCreated ? 201 : 200;
  res.set_content(ResultJson(a, req.body.size(),
                             o == PutOutcome::kCreated ? "created" : o == PutOutcome::kReplaced ? "replaced" : "unchanged"),
                  "application/json");
  if (o == PutOutcome::kUnchanged || !s.options.on_result || s.callbacks_off) return;
  s.options.on_result(a.result.sweep, a.result.entry, a.result.name, req.body);
}

// The request's body handler: the gate again (cheap, and the handler then
// depends on nothing the pre-routing hook decided), then the route.
void Serve(State& s, const httplib::Request& req, httplib::Response& res) {
  GateDecision d = Gate(s, req);
  if (const Refusal* r = std::get_if<Refusal>(&d)) return Answer(res, *r);
  const Admitted& a = std::get<Admitted>(d);
  switch (a.route) {
    case Route::kHealth: return res.set_content("{\"status\":\"ok\"}", "application/json");
    case Route::kEvents: return ServeEvents(s, req, res);
    case Route::kResult: return ServeResult(s, a, req, res);
  }
}

void ConfigureHooks(State& s) {
  httplib::Server& server = s.server;
  // Refused from the head alone: a client that asked for 100-continue never
  // sends its body. Without Expect, a body on the way is read first (up to
  // the payload limit; httplib skips a larger one and answers 413 itself)
  // and refused by the handler, so the connection stays in step and every
  // client reads the answer; except for a missing or wrong token (no body
  // of a stranger is buffered) and a body of unknown length: those are
  // answered at once and the connection closed.
  server.set_expect_100_continue_handler([&s](const httplib::Request& req, httplib::Response& res) {
    GateDecision d = Gate(s, req);
    if (const Refusal* r = std::get_if<Refusal>(&d)) {
      Answer(res, *r);
      return r->status;
    }
    return 100;
  });
  server.set_pre_routing_handler([&s](const httplib::Request& req, httplib::Response& res) {
    GateDecision d = Gate(s, req);
    const Refusal* r = std::get_if<Refusal>(&d);
    if (!r) return httplib::Server::HandlerResponse::Unhandled;
    const bool chunked = req.has_header("Transfer-Encoding");
    if (req.has_header("Content-Length") && !chunked && r->status != 401) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    Answer(res, *r);
    if (req.has_header("Content-Length") || chunked) res.set_header("Connection", "close");
    return httplib::Server::HandlerResponse::Handled;
  });
  // httplib's own refusals (a malformed request line, a body over the
  // payload limit) in the same JSON shape as ours.
  // Handled even when the body is ours: httplib then frames every error
  // answer with its Content-Length (it does not for an answer to Expect).
  server.set_error_handler(httplib::Server::HandlerWithResponse(
      [](const httplib::Request&, httplib::Response& res) {
        if (res.body.empty()) res.set_content(ErrorJson(StatusText(res.status)), "application/json");
        return httplib::Server::HandlerResponse::Handled;
      }));
  server.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
    res.status = 500;
    res.set_content(ErrorJson("internal error"), "application/json");
  });
  server.set_logger([&s](const httplib::Request& req, const httplib::Response& res) {
    if (res.status < 400 || !s.options.log) return;
    std::lock_guard<std::mutex> lock(s.callback_mu);
    if (s.callbacks_off) return;
    s.options.log(std::to_string(res.status) + " " + LogText(req.method) + " " + LogText(req.target) +
                  " from " + req.remote_addr + ": " + LogText(res.body));
  });
}

void ConfigureServer(State& s) {
  httplib::Server& server = s.server;
  const CollectorOptions& o = s.options;
  server.new_task_queue = [&s] { return new QueueAdapter(&s); };
  server.set_payload_max_length(kMaxResultBytes);
  server.set_read_timeout(o.read_timeout);
  server.set_write_timeout(o.read_timeout);
  server.set_keep_alive_timeout(o.keep_alive_timeout.count());
  server.set_keep_alive_max_count(100);
  // httplib writes an answer's head and body apart; with Nagle's algorithm
  // the body waits for the client's delayed ACK (40 ms a request).
  server.set_tcp_nodelay(true);
  // Replaces httplib's default (SO_REUSEADDR), so that is set here again: a
  // restarted collector binds its port while old connections linger.
  server.set_socket_options([&s](int sock) {
    int one = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    ::fcntl(sock, F_SETFD, FD_CLOEXEC);
    s.listen_fd = sock;
  });
  const auto serve = [&s](const httplib::Request& req, httplib::Response& res) { Serve(s, req, res); };
  // Every path: the route is chosen on the raw target (RequestGate), never
  // on httplib's percent-decoded path.
  const char* any = R"([\s\S]*)";
  server.Get(any, serve);
  server.Post(any, serve);
  server.Put(any, serve);
  server.Delete(any, serve);
  server.Patch(any, serve);
  server.Options(any, serve);
  ConfigureHooks(s);
}

// The host resolves to a local address, said plainly (httplib only says no).
Status CheckHost(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), "0", &hints, &found);
  if (rc != 0) return Error{"listen address " + host + ": not an address or host name (" + gai_strerror(rc) + ")"};
  ::freeaddrinfo(found);
  return Ok{};
}

Status Bind(State& s) {
  const CollectorOptions& o = s.options;
  if (o.port < 0 || o.port > 65535) return Error{"listen port " + std::to_string(o.port) + ": must be 0 to 65535"};
  errno = 0;
  s.port = o.port == 0 ? s.server.bind_to_any_port(o.host) : (s.server.bind_to_port(o.host, o.port) ? o.port : -1);
  if (s.port < 0) {
    const int err = errno;
    return Error{"cannot listen on " + o.host + ":" + std::to_string(o.port) + ": " +
                 (err ? std::strerror(err) : "no such local address")};
  }
  // httplib listens with a backlog of 5; agents that all connect at once
  // (a job of many nodes finishing) would see refusals.
  if (s.listen_fd >= 0) ::listen(s.listen_fd, 512);
  return Ok{};
}

}  // namespace

Result<std::unique_ptr<Collector>> Collector::Start(CollectorOptions options) {
  if (Status ok = CheckToken(options.token); !ok) return Error{"collector token: " + ok.error().message};
  if (options.threads == 0) return Error{"collector threads: must be at least 1"};
  if (Status ok = CheckHost(options.host); !ok) return ok.error();
  Result<CollectorStore> store = CollectorStore::Open(options.db_path);
  if (!store) return store.error();
  auto state = std::make_shared<State>(std::move(options), std::move(store).value());
  ConfigureServer(*state);
  if (Status ok = Bind(*state); !ok) return ok.error();
  std::thread listener([state] {
    state->server.listen_after_bind();
    std::lock_guard<std::mutex> lock(state->done_mu);
    state->listener_done = true;
    state->done_cv.notify_all();
  });
  // Until the accept loop runs, httplib's stop() would be a no-op.
  std::unique_lock<std::mutex> lock(state->done_mu);
  for (int i = 0; i < 2000 && !state->server.is_running() && !state->listener_done; ++i) {
    state->done_cv.wait_for(lock, std::chrono::milliseconds(1));
  }
  const bool failed = state->listener_done;
  lock.unlock();
  if (failed) {
    listener.join();
    return Error{"the collector on " + state->options.host + ":" + std::to_string(state->port) + " stopped at once"};
  }
  return std::unique_ptr<Collector>(new Collector(std::move(state), std::move(listener)));
}

Collector::Collector(std::shared_ptr<State> state, std::thread listener)
    : state_(std::move(state)), listener_(std::move(listener)) {}

Collector::~Collector() { Stop(); }

int Collector::port() const { return state_->port; }

const std::string& Collector::host() const { return state_->options.host; }

void Collector::Stop() {
  if (stopped_) return;
  stopped_ = true;
  {
    std::lock_guard<std::mutex> lock(state_->callback_mu);
    state_->callbacks_off = true;
  }
  state_->server.stop();
  {
    std::lock_guard<std::mutex> lock(state_->queue_mu);
    if (state_->queue) state_->queue->Release();
  }
  std::unique_lock<std::mutex> lock(state_->done_mu);
  const bool done = state_->done_cv.wait_for(lock, state_->options.stop_deadline,
                                             [this] { return state_->listener_done; });
  lock.unlock();
  if (done) {
    listener_.join();
  } else {
    listener_.detach();  // it holds the state; it ends when its last request does
  }
}

}  // namespace ix
