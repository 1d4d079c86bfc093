// SocketProber: the readiness probes of core/process/readiness.h over a plain TCP
// socket, without libcurl (whose dependency tree costs ~6.6 ms of start-up
// in ix-stepd). Same ProbeResult semantics as CurlProber: `ready` on HTTP
// 200 (and, for models_nonempty, EvaluateModels), `http_status` 0 when no
// HTTP answer came, `detail` worded like curl's messages ("HTTP 503",
// "Failed to connect to 127.0.0.1 port 8000 after 0 ms: Couldn't connect to
// server", "Operation timed out after 50 milliseconds with 0 bytes
// received").
//
// Scope: `http://HOST[:PORT][/PATH]` only: HTTP/1.1, one GET per connection
// (`Connection: close`), no TLS, no proxy, no redirects, no credentials.
// "localhost" means 127.0.0.1, then ::1 (no resolver); IP literals are
// taken as they are; other names are an error (no name lookups: ix-stepd is
// static, and the probes are meant for the step's own servers).
//
// Invariants: a probe never throws, never raises SIGPIPE, starts no thread,
// and closes every descriptor it opened before it returns. Its whole time
// is bounded by ProbeOptions::timeout (the connect by connect_timeout as
// well). The header block is capped at
// 64 KiB and the body at 1 MiB.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/process/readiness.h"
#include "core/base/result.h"

namespace ix {

inline constexpr size_t kProbeMaxHeaders = 64u << 10;
inline constexpr size_t kProbeMaxBody = 1u << 20;

// A parsed `http://` URL. `host` is as written, without IPv6 brackets;
// `host_header` is what goes in the Host header ("127.0.0.1:8000",
// "[::1]:8000"); `target` is the request target (path and query, "/" when
// the URL has none; a fragment is dropped).
struct HttpUrl {
  std::string host;
  uint16_t port = 80;
  std::string target;
  std::string host_header;
};

// Parses `url`; an Error says why it is not supported or malformed
// (https, no host, a bad port, userinfo, spaces or control characters). Pure.
Result<HttpUrl> ParseHttpUrl(std::string_view url);

// One HTTP/1.x answer parsed from the bytes received so far. kIncomplete:
// more bytes are needed (never returned once `closed`); kComplete: status,
// headers and the whole body (Content-Length, chunked, or up to the close)
// are there; kBad: malformed or over the caps, `detail` says how. `status`
// is set as soon as the status line of the final answer (1xx interim
// answers are skipped) and its headers are in. Pure.
struct HttpAnswer {
  enum class State { kIncomplete, kComplete, kBad };
  State state = State::kIncomplete;
  long status = 0;
  std::string body;  // decoded; set only when kComplete
  std::string detail;
};
HttpAnswer ParseHttpAnswer(std::string_view raw, bool closed);

// The prober. Stateless: every probe opens and closes its own connection
// (a local connect costs tens of microseconds).
class SocketProber final : public HttpGetProber {
 public:
  // One GET, also for reading a server's /metrics (ix-stepd's hang polls).
  ProbeResult Get(const std::string& url, const ProbeOptions& options, std::string* body) override;
};

}  // namespace ix
