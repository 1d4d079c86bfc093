#include "submitter/collector/request_gate.h"

#include <strings.h>

#include <cstdint>

#include "core/base/sha256.h"
#include "core/base/text.h"

namespace ix {
namespace {

constexpr std::string_view kEventsPath = "/v1/events";
constexpr std::string_view kHealthPath = "/v1/health";
constexpr std::string_view kResultsPrefix = "/v1/results/";

bool EqualsNoCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && ::strncasecmp(a.data(), b.data(), a.size()) == 0;
}

// The values of header `name` (any case), in order.
std::vector<std::string_view> HeaderValues(const RequestHead& head, std::string_view name) {
  std::vector<std::string_view> out;
  for (const auto& [n, v] : head.headers) {
    if (EqualsNoCase(n, name)) out.push_back(Trim(v, " \t"));
  }
  return out;
}

// The media type of a Content-Type value, lowercased, without parameters.
std::string MediaType(std::string_view value) {
  std::string out(Trim(value.substr(0, value.find(';')), " \t"));
  for (char& c : out) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return out;
}

Refusal Refuse(int status, std::string message) { return Refusal{status, std::move(message), false, ""}; }

// nullopt when the Authorization header carries `token`.
std::optional<Refusal> CheckBearer(const RequestHead& head, const std::string& token) {
  const std::vector<std::string_view> auth = HeaderValues(head, "Authorization");
  std::string why;
  if (auth.empty()) {
    why = "missing Authorization header; send Authorization: Bearer TOKEN";
  } else if (auth.size() > 1) {
    why = "more than one Authorization header";
  } else {
    const std::string_view v = auth[0];
    const size_t space = v.find_first_of(" \t");
    const std::string_view given = space == std::string_view::npos ? "" : Trim(v.substr(space), " \t");
    if (space == std::string_view::npos || !EqualsNoCase(v.substr(0, space), "Bearer") || given.empty()) {
      why = "the Authorization header must be Bearer TOKEN";
    } else if (!TokensEqual(given, token)) {
      why = "wrong bearer token";
    } else {
      return std::nullopt;
    }
  }
  return Refusal{401, why, true, ""};
}

// The route of the raw path and the method it takes, or a 404/405.
std::variant<Admitted, Refusal> MatchRoute(const std::string& method, std::string_view path) {
  Admitted a;
  std::string allowed;
  if (path == kEventsPath) {
    a.route = Route::kEvents;
    allowed = "POST";
  } else if (path.substr(0, kResultsPrefix.size()) == kResultsPrefix) {
    a.route = Route::kResult;
    allowed = "PUT";
  } else {
    return Refuse(404, "no such route; the collector serves POST /v1/events, PUT /v1/results/SWEEP/ENTRY/NAME "
                       "and GET /v1/health");
  }
  if (method != allowed) return Refusal{405, path == kEventsPath ? "POST only" : "PUT only", false, allowed};
  if (a.route == Route::kResult) {
    Result<ResultTarget> t = ParseResultTarget(path.substr(kResultsPrefix.size()));
    if (!t) return Refuse(400, t.error().message);
    a.result = std::move(t).value();
  }
  return a;
}

// The body's framing, type and size.
std::optional<Refusal> CheckBody(const RequestHead& head, Admitted& a) {
  if (!HeaderValues(head, "Transfer-Encoding").empty()) {
    return Refuse(411, "Transfer-Encoding is not accepted; send the body with a Content-Length");
  }
  for (std::string_view enc : HeaderValues(head, "Content-Encoding")) {
    if (!EqualsNoCase(enc, "identity")) return Refuse(415, "Content-Encoding: only identity is accepted");
  }
  const std::vector<std::string_view> type = HeaderValues(head, "Content-Type");
  const std::string media = type.empty() ? "" : MediaType(type[0]);
  if (a.route == Route::kEvents && (type.size() != 1 || media != "application/json")) {
    return Refuse(415, "Content-Type: must be application/json");
  }
  if (a.route == Route::kResult && (type.size() > 1 || media == "application/x-www-form-urlencoded" ||
                                    media.rfind("multipart/", 0) == 0)) {
    return Refuse(415, "Content-Type: a form is not accepted; send application/octet-stream");
  }
  const std::vector<std::string_view> length = HeaderValues(head, "Content-Length");
  if (length.empty()) return Refuse(411, "Content-Length: required");
  uint64_t n = 0;
  if (length.size() > 1 || !ParseUnsigned(length[0], n)) {
    return Refuse(400, "Content-Length: must be one decimal number");
  }
  const size_t limit = a.route == Route::kEvents ? kMaxEventsBodyBytes : kMaxResultBytes;
  if (n > limit) {
    return Refuse(413, "Content-Length: " + std::to_string(n) + " bytes; at most " + std::to_string(limit) +
                           " are accepted here");
  }
  a.content_length = static_cast<size_t>(n);
  return std::nullopt;
}

std::optional<Refusal> CheckSha256Header(const RequestHead& head, Admitted& a) {
  const std::vector<std::string_view> sha = HeaderValues(head, "X-Content-SHA256");
  if (sha.size() != 1 || !IsSha256Hex(sha[0])) {
    return Refuse(400, "X-Content-SHA256: required, the body's SHA-256 as 64 lowercase hex digits");
  }
  a.sha256 = std::string(sha[0]);
  return std::nullopt;
}

}  // namespace

bool TokensEqual(std::string_view a, std::string_view b) {
  const std::string ha = Sha256Hex(a);
  const std::string hb = Sha256Hex(b);
  unsigned char diff = ha.size() == hb.size() ? 0 : 1;
  for (size_t i = 0; i < ha.size() && i < hb.size(); ++i) diff |= static_cast<unsigned char>(ha[i] ^ hb[i]);
  return diff == 0;
}

GateDecision CheckRequestHead(const RequestHead& head, const std::string& token) {
  const std::string_view path = std::string_view(head.target).substr(0, head.target.find('?'));
  if (path == kHealthPath) {
    if (head.method != "GET" && head.method != "HEAD") return Refusal{405, "GET only", false, "GET, HEAD"};
    return Admitted{};
  }
  if (std::optional<Refusal> r = CheckBearer(head, token)) return *r;
  std::variant<Admitted, Refusal> routed = MatchRoute(head.method, path);
  if (std::holds_alternative<Refusal>(routed)) return routed;
  Admitted a = std::get<Admitted>(std::move(routed));
  if (std::optional<Refusal> r = CheckBody(head, a)) return *r;
  if (a.route == Route::kResult) {
    if (std::optional<Refusal> r = CheckSha256Header(head, a)) return *r;
  }
  return a;
}

}  // namespace ix
