// RequestGate: what the collector decides about a request from its request
// line and headers alone, before any body is read: the route (on the raw
// target, never a percent-decoded one), the bearer token (compared in
// constant time; only GET /v1/health goes without), the method, and the
// body's framing and size (a Content-Length within the route's limit; no
// chunked or compressed bodies, whose size is unknown until read). Pure: the
// HTTP server adapts its request into a RequestHead and answers a Refusal
// as it is.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "submitter/collector/event_validation.h"

namespace ix {

// A request as far as the gate looks at it.
struct RequestHead {
  std::string method;
  std::string target;  // raw, as on the request line
  std::vector<std::pair<std::string, std::string>> headers;  // as sent, any case
};

enum class Route { kHealth, kEvents, kResult };

// The request may go on; for kResult, `result` holds its path's parts and
// `sha256` the announced digest.
struct Admitted {
  Route route = Route::kHealth;
  ResultTarget result;
  std::string sha256;
  size_t content_length = 0;
};

// The answer instead: `status` with `{"error": message}`. `authenticate`:
// send `WWW-Authenticate: Bearer`; `allow`: the Allow header of a 405.
struct Refusal {
  int status = 400;
  std::string message;
  bool authenticate = false;
  std::string allow;
};

using GateDecision = std::variant<Admitted, Refusal>;

// Checks, in order: health (GET or HEAD, no token); the bearer token (401);
// the route (404) and method (405); for a body: no Transfer-Encoding (411),
// no Content-Encoding but identity (415), the Content-Type (events:
// application/json; results: not a form, which the server would parse),
// one decimal Content-Length (411 without, 400 unreadable) within the
// route's limit (413); for a result its path parts and X-Content-SHA256
// (400). `token` is the expected one, never empty.
GateDecision CheckRequestHead(const RequestHead& head, const std::string& token);

// True when `a` and `b` are equal, in time that depends on neither's
// content nor length (both are hashed first).
bool TokensEqual(std::string_view a, std::string_view b);

}  // namespace ix
