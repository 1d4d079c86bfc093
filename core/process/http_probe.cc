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

namespace ix {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kNpos = std::string_view::npos;

// ---- Text helpers ----------------------------------------------------------

char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (Lower(a[i]) != Lower(b[i])) return false;
  }
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
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

enum class Step { kNeedMore, kDone, kBad };

// Walks a chunked body from `pos` (RFC 9112 7.1: hex size[;ext] CRLF data
// CRLF ..., 0 CRLF, trailers, CRLF); appends the data to *out when given.
Step WalkChunks(std::string_view raw, size_t pos, std::string* out, std::string* why) {
  uint64_t total = 0;
  std::string_view line;
  for (;;) {
    size_t next = ReadLine(raw, pos, &line);
    if (next == kNpos) {
      if (raw.size() - pos <= 1024) return Step::kNeedMore;
      *why = "malformed chunked body (a chunk size line longer than 1 KiB)";
      return Step::kBad;
    }
    const std::string_view digits = Trim(line.substr(0, line.find(';')));
    uint64_t size = 0;
    bool ok = !digits.empty() && digits.size() <= 15;
    for (char c : digits) {
      const int v = HexValue(c);
      if (v < 0) ok = false;
      size = size * 16 + static_cast<uint64_t>(std::max(v, 0));
    }
    if (!ok) {
      *why = "malformed chunked body (bad chunk size line " + Excerpt(line) + ")";
      return Step::kBad;
    }
    pos = next;
    if (size == 0) {  // the last chunk: trailers up to an empty line
      for (;;) {
        next = ReadLine(raw, pos, &line);
        if (next == kNpos) {
          if (raw.size() - pos <= kProbeMaxHeaders) return Step::kNeedMore;
          *why = "trailers larger than " + std::to_string(kProbeMaxHeaders >> 10) + " KiB";
          return Step::kBad;
        }
        pos = next;
        if (line.empty()) return Step::kDone;
      }
    }
    total += size;
    if (total > kProbeMaxBody) {
      *why = "answer larger than " + std::to_string(kProbeMaxBody >> 20) + " MiB";
      return Step::kBad;
    }
    if (raw.size() - pos < size) return Step::kNeedMore;
    if (out) out->append(raw.substr(pos, size));
    pos += size;
    next = ReadLine(raw, pos, &line);  // the CR LF after the data
    if (next == kNpos && raw.size() - pos < 2) return Step::kNeedMore;
    if (next == kNpos || !line.empty()) {
      *why = "malformed chunked body (chunk data longer than its size)";
      return Step::kBad;
    }
    pos = next;
  }
}

// ---- Sockets ---------------------------------------------------------------

// Owns one descriptor.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(Fd&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      if (fd_ >= 0) ::close(fd_);
      fd_ = other.fd_;
      other.fd_ = -1;
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

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

struct Address {
  sockaddr_storage sa{};
  socklen_t len = 0;
  int family = AF_UNSPEC;
};

Address Ipv4(const in_addr& a, uint16_t port) {
  Address r;
  auto* s = reinterpret_cast<sockaddr_in*>(&r.sa);
  s->sin_family = AF_INET;
  s->sin_port = htons(port);
  s->sin_addr = a;
  r.len = sizeof(sockaddr_in);
  r.family = AF_INET;
  return r;
}

Address Ipv6(const in6_addr& a, uint16_t port) {
  Address r;
  auto* s = reinterpret_cast<sockaddr_in6*>(&r.sa);
  s->sin6_family = AF_INET6;
  s->sin6_port = htons(port);
  s->sin6_addr = a;
  r.len = sizeof(sockaddr_in6);
  r.family = AF_INET6;
  return r;
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
// socket, or an invalid Fd with *err set (ETIMEDOUT at the deadline).
Fd Connect(const Address& a, Clock::time_point deadline, int* err) {
  Fd fd(::socket(a.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) {
    *err = errno;
    return Fd();
  }
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&a.sa), a.len) == 0) return fd;
  if (errno != EINPROGRESS && errno != EINTR) {
    *err = errno;
    return Fd();
  }
  const int w = WaitFor(fd.get(), POLLOUT, deadline);
  if (w <= 0) {
    *err = w == 0 ? ETIMEDOUT : errno;
    return Fd();
  }
  int so_error = 0;
  socklen_t len = sizeof so_error;
  if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &so_error, &len) != 0) so_error = errno;
  if (so_error != 0) {
    *err = so_error;
    return Fd();
  }
  return fd;
}

std::string TimedOut(Clock::time_point start, size_t received) {
  return "Operation timed out after " + std::to_string(ElapsedMs(start)) + " milliseconds with " +
         std::to_string(received) + " bytes received";
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
    unsigned long port = 0;
    for (char c : port_text) {
      if (!IsDigit(c) || port > 65535) return malformed("bad port");
      port = port * 10 + static_cast<unsigned long>(c - '0');
    }
    if (port == 0 || port > 65535) return malformed("bad port");
    u.port = static_cast<uint16_t>(port);
  }
  tail = tail.substr(0, tail.find('#'));
  u.target = tail.empty() ? "/" : tail.front() == '?' ? "/" + std::string(tail) : std::string(tail);
  u.host_header = (bracketed ? "[" + u.host + "]" : u.host) + ":" + std::to_string(u.port);
  return u;
}

HttpAnswer ParseHttpAnswer(std::string_view raw, bool closed) {
  HttpAnswer a;
  auto bad = [&a](std::string detail) {
    a.state = HttpAnswer::State::kBad;
    a.detail = std::move(detail);
    return a;
  };
  const std::string too_large_headers = "header block larger than " + std::to_string(kProbeMaxHeaders >> 10) + " KiB";
  // The header blocks: 1xx interim answers (100 Continue, 103 Early Hints)
  // come before the final one and are skipped.
  size_t pos = 0;
  long status = 0;
  bool chunked = false;
  bool has_length = false;
  uint64_t length = 0;
  std::string_view line;
  for (;;) {
    const size_t block = pos;
    size_t next = ReadLine(raw, pos, &line);
    if (next == kNpos) {
      if (raw.size() - block > kProbeMaxHeaders) return bad(too_large_headers);
      if (!closed) return a;
      return bad(raw.size() == block ? "Empty reply from server" : "connection closed in the middle of the status line");
    }
    status = StatusCode(line);
    if (status < 0) return bad("not an HTTP/1.x answer: " + Excerpt(line));
    pos = next;
    chunked = false;
    has_length = false;
    for (;;) {
      next = ReadLine(raw, pos, &line);
      if (next == kNpos) {
        if (raw.size() - block > kProbeMaxHeaders) return bad(too_large_headers);
        if (!closed) return a;
        return bad("connection closed in the middle of the headers");
      }
      if (next - block > kProbeMaxHeaders) return bad(too_large_headers);
      pos = next;
      if (line.empty()) break;
      const size_t colon = line.find(':');
      if (colon == kNpos || colon == 0) return bad("malformed header line " + Excerpt(line));
      const std::string_view name = line.substr(0, colon);
      const std::string_view value = Trim(line.substr(colon + 1));
      if (IEquals(name, "Transfer-Encoding")) {
        // Chunked when it is the last coding (RFC 9112 6.3).
        const size_t comma = value.rfind(',');
        chunked = IEquals(Trim(comma == kNpos ? value : value.substr(comma + 1)), "chunked");
      } else if (IEquals(name, "Content-Length")) {
        uint64_t n = 0;
        if (value.empty() || value.size() > 18) return bad("bad Content-Length " + Excerpt(value));
        for (char c : value) {
          if (!IsDigit(c)) return bad("bad Content-Length " + Excerpt(value));
          n = n * 10 + static_cast<uint64_t>(c - '0');
        }
        if (has_length && length != n) return bad("conflicting Content-Length headers");
        has_length = true;
        length = n;
      }
    }
    if (status == 101) return bad("HTTP 101: the server switched protocols");
    if (status >= 200) break;
  }
  a.status = status;
  const std::string too_large = "answer larger than " + std::to_string(kProbeMaxBody >> 20) + " MiB";
  const size_t start = pos;
  if (status == 204 || status == 304) {  // never a body
    a.state = HttpAnswer::State::kComplete;
    return a;
  }
  if (chunked) {  // wins over Content-Length
    std::string why;
    Step s = WalkChunks(raw, start, nullptr, &why);
    if (s == Step::kDone) s = WalkChunks(raw, start, &a.body, &why);
    if (s == Step::kBad) return bad(why);
    if (s == Step::kNeedMore) {
      if (closed) return bad("transfer closed with outstanding read data remaining");
      return a;
    }
    a.state = HttpAnswer::State::kComplete;
    return a;
  }
  const size_t have = raw.size() - start;
  if (has_length) {
    if (length > kProbeMaxBody) return bad(too_large);
    if (have < length) {
      if (closed) return bad("transfer closed with " + std::to_string(length - have) + " bytes remaining to read");
      return a;
    }
    a.body = std::string(raw.substr(start, length));
    a.state = HttpAnswer::State::kComplete;
    return a;
  }
  // Neither: the body ends at the close.
  if (have > kProbeMaxBody) return bad(too_large);
  if (!closed) return a;
  a.body = std::string(raw.substr(start));
  a.state = HttpAnswer::State::kComplete;
  return a;
}

ProbeResult SocketProber::Get(const std::string& url, const ProbeOptions& options, std::string* body,
                              bool* answered) {
  ProbeResult r;
  *answered = false;
  if (body) body->clear();
  const auto start = Clock::now();
  const auto timeout = std::max(options.timeout, std::chrono::milliseconds(1));
  const auto deadline = start + timeout;
  const auto connect_deadline =
      start + std::clamp(options.connect_timeout, std::chrono::milliseconds(1), timeout);

  Result<HttpUrl> parsed = ParseHttpUrl(url);
  if (!parsed) {
    r.detail = parsed.error().message;
    return r;
  }
  const HttpUrl& u = parsed.value();
  Result<std::vector<Address>> addresses = Resolve(u);
  if (!addresses) {
    r.detail = addresses.error().message;
    return r;
  }

  // Connect: each address in turn, within the one connect timeout. The
  // first failure is the one reported (for localhost, 127.0.0.1's).
  Fd fd;
  int err = 0;
  for (const Address& a : addresses.value()) {
    int e = 0;
    fd = Connect(a, connect_deadline, &e);
    if (fd.get() >= 0) break;
    if (err == 0) err = e;
    if (e == ETIMEDOUT) break;
  }
  if (fd.get() < 0) {
    r.detail = "Failed to connect to " + u.host + " port " + std::to_string(u.port) + " after " +
               std::to_string(ElapsedMs(start)) + " ms: " +
               (err == ECONNREFUSED ? std::string("Couldn't connect to server")
                : err == ETIMEDOUT  ? std::string("Connection timed out")
                                    : "Couldn't connect to server (" + std::string(std::strerror(err)) + ")");
    return r;
  }
  const int one = 1;
  ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);

  // Send the request (MSG_NOSIGNAL: a closed peer is EPIPE, not SIGPIPE).
  const std::string request = "GET " + u.target + " HTTP/1.1\r\nHost: " + u.host_header +
                              "\r\nUser-Agent: ix-stepd\r\nAccept: */*\r\nConnection: close\r\n\r\n";
  for (size_t sent = 0; sent < request.size();) {
    const ssize_t n = ::send(fd.get(), request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n >= 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      r.detail = std::string("Send failure: ") + std::strerror(errno);
      return r;
    }
    const int w = WaitFor(fd.get(), POLLOUT, deadline);
    if (w == 0) {
      r.detail = TimedOut(start, 0);
      return r;
    }
    if (w < 0) {
      r.detail = std::string("Send failure: ") + std::strerror(errno);
      return r;
    }
  }

  // Read until the answer is whole, the server closes, or the deadline.
  // Chunk framing can add to the body, so the raw bytes may exceed the caps
  // somewhat; the parser enforces the caps themselves.
  constexpr size_t kMaxRaw = kProbeMaxHeaders + 2 * kProbeMaxBody;
  std::string raw;
  char buf[16384];
  for (;;) {
    const int w = WaitFor(fd.get(), POLLIN, deadline);
    if (w == 0) {
      r.http_status = ParseHttpAnswer(raw, false).status;
      r.detail = TimedOut(start, raw.size());
      return r;
    }
    if (w < 0) {
      r.detail = std::string("Recv failure: ") + std::strerror(errno);
      return r;
    }
    const ssize_t n = ::recv(fd.get(), buf, sizeof buf, 0);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      r.http_status = ParseHttpAnswer(raw, false).status;
      r.detail = std::string("Recv failure: ") + std::strerror(errno);
      return r;
    }
    raw.append(buf, static_cast<size_t>(n));
    const bool closed = n == 0;
    if (raw.size() > kMaxRaw) {
      r.detail = "answer larger than " + std::to_string(kProbeMaxBody >> 20) + " MiB";
      return r;
    }
    HttpAnswer a = ParseHttpAnswer(raw, closed);
    if (a.state == HttpAnswer::State::kIncomplete) continue;
    r.http_status = a.status;
    if (a.state == HttpAnswer::State::kBad) {
      r.detail = a.detail;
      return r;
    }
    *answered = true;
    r.answered = true;
    r.ready = a.status == 200;
    if (!r.ready) r.detail = "HTTP " + std::to_string(a.status);
    if (body) *body = std::move(a.body);
    return r;
  }
}

ProbeResult SocketProber::HttpOk(const std::string& url, const ProbeOptions& options) {
  bool answered = false;
  return Get(url, options, nullptr, &answered);
}

ProbeResult SocketProber::ModelsNonEmpty(const std::string& url, const ProbeOptions& options) {
  std::string body;
  bool answered = false;
  ProbeResult r = Get(url, options, &body, &answered);
  return answered ? EvaluateModels(r.http_status, body) : r;
}

ProbeResult SocketProber::Probe(const ReadinessCheck& check, const ProbeOptions& options) {
  return check.kind == ReadinessTemplate::Kind::kHttpOk ? HttpOk(check.url, options)
                                                         : ModelsNonEmpty(check.url, options);
}

}  // namespace ix
