#include "core/process/http_probe.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

#include "core/base/text.h"
#include "core/base/unique_fd.h"

namespace ix {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kNpos = std::string_view::npos;
constexpr std::string_view kOws = " \t";  // HTTP's optional whitespace

// ---- Text helpers ----------------------------------------------------------

char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (Lower(a[i]) != Lower(b[i])) return false;
  }
  return true;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

int HexValue(char c) {
  if (IsDigit(c)) return c - '0';
  c = Lower(c);
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

// Up to 80 characters, quoted, with line breaks and tabs as spaces.
std::string Excerpt(std::string_view s) {
  std::string e(s.substr(0, 80));
  for (char& c : e) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  return "'" + e + (s.size() > 80 ? "...'" : "'");
}

long ElapsedMs(Clock::time_point since) {
  return static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - since).count());
}

std::string AnswerTooLarge() { return "answer larger than " + std::to_string(kProbeMaxBody >> 20) + " MiB"; }

// ---- Response parsing ------------------------------------------------------

// The line that starts at `pos`, without its CR LF (or bare LF), in *line;
// returns the position after it, or kNpos when the line has no end yet.
size_t ReadLine(std::string_view s, size_t pos, std::string_view* line) {
  const size_t nl = s.find('\n', pos);
  if (nl == kNpos) return kNpos;
  size_t end = nl;
  if (end > pos && s[end - 1] == '\r') --end;
  *line = s.substr(pos, end - pos);
  return nl + 1;
}

// "HTTP/1.x NNN[ reason]" -> NNN; -1 when it is not such a line.
long StatusCode(std::string_view line) {
  if (line.size() < 12 || line.substr(0, 7) != "HTTP/1." || !IsDigit(line[7]) || line[8] != ' ') return -1;
  if (!IsDigit(line[9]) || !IsDigit(line[10]) || !IsDigit(line[11])) return -1;
  if (line.size() > 12 && line[12] != ' ') return -1;
  const long code = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
  return code >= 100 ? code : -1;
}

// How far a parse got: the bytes so far are not enough, the part is whole,
// or it is malformed (`why` says how).
enum class Step { kNeedMore, kDone, kBad };

Step Bad(std::string* why, std::string detail) {
  *why = std::move(detail);
  return Step::kBad;
}

// Walks a chunked body from `pos` (RFC 9112 7.1: hex size[;ext] CRLF data
// CRLF ..., 0 CRLF, trailers, CRLF); appends the data to *out when given.
Step WalkChunks(std::string_view raw, size_t pos, std::string* out, std::string* why) {
  uint64_t total = 0;
  std::string_view line;
  for (;;) {
    size_t next = ReadLine(raw, pos, &line);
    if (next == kNpos) {
      if (raw.size() - pos <= 1024) return Step::kNeedMore;
      return Bad(why, "malformed chunked body (a chunk size line longer than 1 KiB)");
    }
    const std::string_view digits = Trim(line.substr(0, line.find(';')), kOws);
    uint64_t size = 0;
    bool ok = !digits.empty() && digits.size() <= 15;
    for (char c : digits) {
      const int v = HexValue(c);
      if (v < 0) ok = false;
      size = size * 16 + static_cast<uint64_t>(std::max(v, 0));
    }
    if (!ok) return Bad(why, "malformed chunked body (bad chunk size line " + Excerpt(line) + ")");
    pos = next;
    if (size == 0) {  // the last chunk: trailers up to an empty line
      for (;;) {
        next = ReadLine(raw, pos, &line);
        if (next == kNpos) {
          if (raw.size() - pos <= kProbeMaxHeaders) return Step::kNeedMore;
          return Bad(why, "trailers larger than " + std::to_string(kProbeMaxHeaders >> 10) + " KiB");
        }
        pos = next;
        if (line.empty()) return Step::kDone;
      }
    }
    total += size;
    if (total > kProbeMaxBody) return Bad(why, AnswerTooLarge());
    if (raw.size() - pos < size) return Step::kNeedMore;
    if (out) out->append(raw.substr(pos, size));
    pos += size;
    next = ReadLine(raw, pos, &line);  // the CR LF after the data
    if (next == kNpos && raw.size() - pos < 2) return Step::kNeedMore;
    if (next == kNpos || !line.empty()) return Bad(why, "malformed chunked body (chunk data longer than its size)");
    pos = next;
  }
}

// What a header block said about the answer it heads.
struct Head {
  long status = 0;
  bool chunked = false;
  bool has_length = false;
  uint64_t length = 0;
  size_t body_start = 0;  // set for the final block only
};

std::string HeadersTooLarge() {
  return "header block larger than " + std::to_string(kProbeMaxHeaders >> 10) + " KiB";
}

// A block whose end has not come: too large already, more to come, or cut
// short by the close (`cut` says where).
Step Unfinished(std::string_view raw, size_t block, bool closed, const char* cut, std::string* why) {
  if (raw.size() - block > kProbeMaxHeaders) return Bad(why, HeadersTooLarge());
  if (!closed) return Step::kNeedMore;
  return Bad(why, cut);
}

// One "Name: value" line into `head`: the framing headers count, others
// are skipped.
Step ParseHeaderLine(std::string_view line, Head& head, std::string* why) {
  const size_t colon = line.find(':');
  if (colon == kNpos || colon == 0) return Bad(why, "malformed header line " + Excerpt(line));
  const std::string_view name = line.substr(0, colon);
  const std::string_view value = Trim(line.substr(colon + 1), kOws);
  if (IEquals(name, "Transfer-Encoding")) {
    // Chunked when it is the last coding (RFC 9112 6.3).
    const size_t comma = value.rfind(',');
    head.chunked = IEquals(Trim(comma == kNpos ? value : value.substr(comma + 1), kOws), "chunked");
  } else if (IEquals(name, "Content-Length")) {
    uint64_t n = 0;
    if (value.size() > 18 || !ParseUnsigned(value, n)) return Bad(why, "bad Content-Length " + Excerpt(value));
    if (head.has_length && head.length != n) return Bad(why, "conflicting Content-Length headers");
    head.has_length = true;
    head.length = n;
  }
  return Step::kDone;
}

// One header block from `pos`: a status line, header lines, an empty line.
// When kDone, `head` is the block's and `pos` is after it.
Step ParseBlock(std::string_view raw, bool closed, size_t& pos, Head& head, std::string* why) {
  const size_t block = pos;
  std::string_view line;
  size_t next = ReadLine(raw, pos, &line);
  if (next == kNpos) {
    return Unfinished(raw, block, closed,
                      raw.size() == block ? "Empty reply from server"
                                          : "connection closed in the middle of the status line",
                      why);
  }
  head = Head{};
  head.status = StatusCode(line);
  if (head.status < 0) return Bad(why, "not an HTTP/1.x answer: " + Excerpt(line));
  pos = next;
  for (;;) {
    next = ReadLine(raw, pos, &line);
    if (next == kNpos) return Unfinished(raw, block, closed, "connection closed in the middle of the headers", why);
    if (next - block > kProbeMaxHeaders) return Bad(why, HeadersTooLarge());
    pos = next;
    if (line.empty()) return Step::kDone;
    if (ParseHeaderLine(line, head, why) == Step::kBad) return Step::kBad;
  }
}

// The header blocks: 1xx interim answers (100 Continue, 103 Early Hints)
// come before the final one and are skipped. When kDone, `head` is the
// final answer's.
Step ParseHead(std::string_view raw, bool closed, Head& head, std::string* why) {
  size_t pos = 0;
  for (;;) {
    if (const Step s = ParseBlock(raw, closed, pos, head, why); s != Step::kDone) return s;
    if (head.status == 101) return Bad(why, "HTTP 101: the server switched protocols");
    if (head.status >= 200) {
      head.body_start = pos;
      return Step::kDone;
    }
  }
}

// The body `head` announces, from raw[head.body_start]: whole into *body
// (kDone), kNeedMore, or kBad.
Step ParseBody(std::string_view raw, bool closed, const Head& head, std::string* body, std::string* why) {
  const size_t start = head.body_start;
  if (head.status == 204 || head.status == 304) return Step::kDone;  // never a body
  if (head.chunked) {  // wins over Content-Length
    Step s = WalkChunks(raw, start, nullptr, why);
    if (s == Step::kDone) s = WalkChunks(raw, start, body, why);
    if (s == Step::kNeedMore && closed) return Bad(why, "transfer closed with outstanding read data remaining");
    return s;
  }
  const size_t have = raw.size() - start;
  if (head.has_length) {
    if (head.length > kProbeMaxBody) return Bad(why, AnswerTooLarge());
    if (have < head.length) {
      if (!closed) return Step::kNeedMore;
      return Bad(why, "transfer closed with " + std::to_string(head.length - have) + " bytes remaining to read");
    }
    *body = std::string(raw.substr(start, head.length));
    return Step::kDone;
  }
  // Neither: the body ends at the close.
  if (have > kProbeMaxBody) return Bad(why, AnswerTooLarge());
  if (!closed) return Step::kNeedMore;
  *body = std::string(raw.substr(start));
  return Step::kDone;
}

// ---- Sockets ---------------------------------------------------------------

// Waits for `events` on `fd` until `deadline`: 1 when ready (or in error),
// 0 at the deadline, -1 on a poll error (errno).
int WaitFor(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    const auto left = deadline - Clock::now();
    if (left <= Clock::duration::zero()) return 0;
    // Rounded up, so the deadline is never missed by a millisecond.
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(ms, 1 << 30)));
    if (n > 0) return 1;
    if (n < 0 && errno != EINTR) return -1;
  }
}

// A socket address to connect to. Invariant: `sa` holds `len` bytes of a
// sockaddr_in or sockaddr_in6 whose family is sa.ss_family.
struct Address {
  sockaddr_storage sa{};
  socklen_t len = 0;
};

// `s` (a sockaddr_in or sockaddr_in6, its family set) as an Address.
template <class Sockaddr>
Address ToAddress(const Sockaddr& s) {
  Address r;
  std::memcpy(&r.sa, &s, sizeof s);
  r.len = sizeof s;
  return r;
}

Address Ipv4(const in_addr& a, uint16_t port) {
  return ToAddress(sockaddr_in{.sin_family = AF_INET, .sin_port = htons(port), .sin_addr = a, .sin_zero = {}});
}

Address Ipv6(const in6_addr& a, uint16_t port) {
  return ToAddress(sockaddr_in6{
      .sin6_family = AF_INET6, .sin6_port = htons(port), .sin6_flowinfo = 0, .sin6_addr = a, .sin6_scope_id = 0});
}

// The addresses to try, in order: "localhost" is 127.0.0.1 then ::1 (as
// curl does, without the resolver); IP literals as they are. Other names
// are refused: the resolver (NSS) cannot be linked into a static program,
// and ix-stepd probes only the step's own servers.
Result<std::vector<Address>> Resolve(const HttpUrl& u) {
  in_addr a4{};
  in6_addr a6{};
  if (IEquals(u.host, "localhost")) {
    a4.s_addr = htonl(INADDR_LOOPBACK);
    return std::vector<Address>{Ipv4(a4, u.port), Ipv6(in6addr_loopback, u.port)};
  }
  if (::inet_pton(AF_INET, u.host.c_str(), &a4) == 1) return std::vector<Address>{Ipv4(a4, u.port)};
  if (::inet_pton(AF_INET6, u.host.c_str(), &a6) == 1) return std::vector<Address>{Ipv6(a6, u.port)};
  return Error{"Could not resolve host: " + u.host + " (only localhost and IP addresses are probed: no name lookups)"};
}

// A non-blocking connect to `a` finished by `deadline`: the connected
// socket, or an invalid one with *err set (ETIMEDOUT at the deadline).
UniqueFd Connect(const Address& a, Clock::time_point deadline, int* err) {
  UniqueFd fd(::socket(a.sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) {
    *err = errno;
    return UniqueFd();
  }
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&a.sa), a.len) == 0) return fd;
  if (errno != EINPROGRESS && errno != EINTR) {
    *err = errno;
    return UniqueFd();
  }
  const int w = WaitFor(fd.get(), POLLOUT, deadline);
  if (w <= 0) {
    *err = w == 0 ? ETIMEDOUT : errno;
    return UniqueFd();
  }
  int so_error = 0;
  socklen_t len = sizeof so_error;
  if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &so_error, &len) != 0) so_error = errno;
  if (so_error != 0) {
    *err = so_error;
    return UniqueFd();
  }
  return fd;
}

// ---- One probe, step by step -----------------------------------------------

std::string TimedOut(Clock::time_point start, size_t received) {
  return "Operation timed out after " + std::to_string(ElapsedMs(start)) + " milliseconds with " +
         std::to_string(received) + " bytes received";
}

ProbeResult NotReady(std::string detail) {
  ProbeResult r;
  r.detail = std::move(detail);
  return r;
}

// Connects to each address in turn, within the one connect timeout. The
// first failure is the one reported (for localhost, 127.0.0.1's), worded
// as curl words it.
Result<UniqueFd> ConnectAny(const HttpUrl& u, const std::vector<Address>& addresses, Clock::time_point start,
                            Clock::time_point deadline) {
  int err = 0;
  for (const Address& a : addresses) {
    int e = 0;
    UniqueFd fd = Connect(a, deadline, &e);
    if (fd.valid()) return fd;
    if (err == 0) err = e;
    if (e == ETIMEDOUT) break;
  }
  return Error{"Failed to connect to " + u.host + " port " + std::to_string(u.port) + " after " +
               std::to_string(ElapsedMs(start)) + " ms: " +
               (err == ECONNREFUSED ? std::string("Couldn't connect to server")
                : err == ETIMEDOUT  ? std::string("Connection timed out")
                                    : "Couldn't connect to server (" + std::string(std::strerror(err)) + ")")};
}

// Sends the whole request (MSG_NOSIGNAL: a closed peer is EPIPE, not
// SIGPIPE): "" once sent, else what went wrong.
std::string SendAll(int fd, const std::string& request, Clock::time_point start, Clock::time_point deadline) {
  for (size_t sent = 0; sent < request.size();) {
    const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n >= 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return std::string("Send failure: ") + std::strerror(errno);
    const int w = WaitFor(fd, POLLOUT, deadline);
    if (w == 0) return TimedOut(start, 0);
    if (w < 0) return std::string("Send failure: ") + std::strerror(errno);
  }
  return "";
}

// Reads until the answer is whole, the server closes, or the deadline, and
// judges it: 200 is ready. Chunk framing can add to the body, so the raw
// bytes may exceed the caps somewhat; the parser enforces the caps themselves.
ProbeResult ReceiveAnswer(int fd, Clock::time_point start, Clock::time_point deadline, std::string* body) {
  constexpr size_t kMaxRaw = kProbeMaxHeaders + 2 * kProbeMaxBody;
  ProbeResult r;
  std::string raw;
  char buf[16384];
  for (;;) {
    const int w = WaitFor(fd, POLLIN, deadline);
    if (w == 0) {
      r.http_status = ParseHttpAnswer(raw, false).status;
      r.detail = TimedOut(start, raw.size());
      return r;
    }
    if (w < 0) return NotReady(std::string("Recv failure: ") + std::strerror(errno));
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      r.http_status = ParseHttpAnswer(raw, false).status;
      r.detail = std::string("Recv failure: ") + std::strerror(errno);
      return r;
    }
    raw.append(buf, static_cast<size_t>(n));
    if (raw.size() > kMaxRaw) return NotReady(AnswerTooLarge());
    HttpAnswer a = ParseHttpAnswer(raw, n == 0);
    if (a.state == HttpAnswer::State::kIncomplete) continue;
    r.http_status = a.status;
    if (a.state == HttpAnswer::State::kBad) {
      r.detail = a.detail;
      return r;
    }
    r.answered = true;
    r.ready = a.status == 200;
    if (!r.ready) r.detail = "HTTP " + std::to_string(a.status);
    if (body) *body = std::move(a.body);
    return r;
  }
}

}  // namespace

Result<HttpUrl> ParseHttpUrl(std::string_view url) {
  const std::string quoted = Excerpt(url);
  auto malformed = [&](const std::string& why) { return Error{"malformed URL (" + why + "): " + quoted}; };
  for (char c : url) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return malformed("a space or control character");
  }
  const size_t sep = url.find("://");
  if (sep == kNpos) return malformed("no http:// scheme");
  if (!IEquals(url.substr(0, sep), "http")) {
    return Error{"URL not supported (only plain http:// URLs are, no " + std::string(url.substr(0, sep)) +
                 "): " + quoted};
  }
  std::string_view rest = url.substr(sep + 3);
  const size_t auth_end = std::min(rest.find_first_of("/?#"), rest.size());
  std::string_view authority = rest.substr(0, auth_end);
  std::string_view tail = rest.substr(auth_end);
  if (authority.find('@') != kNpos) return Error{"URL not supported (credentials in the URL): " + quoted};

  HttpUrl u;
  std::string_view port_text;
  bool has_port = false;
  bool bracketed = false;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == kNpos) return malformed("no ']' after an IPv6 address");
    u.host = std::string(authority.substr(1, close - 1));
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty() && after.front() != ':') return malformed("text after the IPv6 address");
    has_port = !after.empty();
    if (has_port) port_text = after.substr(1);
    in6_addr a6{};
    const std::string address = u.host;
    if (::inet_pton(AF_INET6, address.c_str(), &a6) != 1) return malformed("bad IPv6 address");
    bracketed = true;
  } else {
    const size_t colon = authority.find(':');
    u.host = std::string(authority.substr(0, colon));
    has_port = colon != kNpos;
    if (has_port) port_text = authority.substr(colon + 1);
    for (char c : u.host) {
      const bool ok = IsDigit(c) || (Lower(c) >= 'a' && Lower(c) <= 'z') || c == '-' || c == '.' || c == '_';
      if (!ok) return malformed("bad character in the host name");
    }
  }
  if (u.host.empty()) return malformed("no host");
  if (has_port && !port_text.empty()) {  // "host:" is port 80, as RFC 3986 says
    uint64_t port = 0;
    if (!ParseUnsigned(port_text, port) || port == 0 || port > 65535) return malformed("bad port");
    u.port = static_cast<uint16_t>(port);
  }
  tail = tail.substr(0, tail.find('#'));
  u.target = tail.empty() ? "/" : tail.front() == '?' ? "/" + std::string(tail) : std::string(tail);
  u.host_header = (bracketed ? "[" + u.host + "]" : u.host) + ":" + std::to_string(u.port);
  return u;
}

HttpAnswer ParseHttpAnswer(std::string_view raw, bool closed) {
  HttpAnswer a;
  Head head;
  Step s = ParseHead(raw, closed, head, &a.detail);
  if (s == Step::kDone) {
    a.status = head.status;
    s = ParseBody(raw, closed, head, &a.body, &a.detail);
  }
  if (s == Step::kDone) a.state = HttpAnswer::State::kComplete;
  if (s == Step::kBad) a.state = HttpAnswer::State::kBad;
  return a;
}

ProbeResult SocketProber::Get(const std::string& url, const ProbeOptions& options, std::string* body) {
  if (body) body->clear();
  const auto start = Clock::now();
  const auto timeout = std::max(options.timeout, std::chrono::milliseconds(1));
  const auto deadline = start + timeout;
  const auto connect_deadline = start + std::clamp(options.connect_timeout, std::chrono::milliseconds(1), timeout);

  Result<HttpUrl> parsed = ParseHttpUrl(url);
  if (!parsed) return NotReady(parsed.error().message);
  const HttpUrl& u = parsed.value();
  Result<std::vector<Address>> addresses = Resolve(u);
  if (!addresses) return NotReady(addresses.error().message);
  Result<UniqueFd> fd = ConnectAny(u, addresses.value(), start, connect_deadline);
  if (!fd) return NotReady(fd.error().message);
  const int one = 1;
  ::setsockopt(fd.value().get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  const std::string request = "GET " + u.target + " HTTP/1.1\r\nHost: " + u.host_header +
                              "\r\nUser-Agent: ix-stepd\r\nAccept: */*\r\nConnection: close\r\n\r\n";
  if (std::string failed = SendAll(fd.value().get(), request, start, deadline); !failed.empty()) {
    return NotReady(std::move(failed));
  }
  return ReceiveAnswer(fd.value().get(), start, deadline, body);
}

}  // namespace ix
