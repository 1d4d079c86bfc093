#include "node_agent/loopback_fetch.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include "core/base/unique_fd.h"

namespace ix {
namespace {

using Clock = std::chrono::steady_clock;

// What an answer's raw bytes may come to: the parser's caps, with room for
// chunk framing (the parser enforces the caps themselves).
constexpr size_t kMaxRaw = kProbeMaxHeaders + 2 * kProbeMaxBody;

bool IsLocalhost(std::string_view host) {
  if (host.size() != 9) return false;
  for (size_t i = 0; i < host.size(); ++i) {
    const char c = host[i];
    if ((c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c) != "localhost"[i]) return false;
  }
  return true;
}

// A socket address. Invariant: `sa` holds `len` bytes of a sockaddr_in or
// sockaddr_in6 of family sa.ss_family.
struct Address {
  sockaddr_storage sa{};
  socklen_t len = 0;
};

Address Ipv4Loopback(uint16_t port) {
  sockaddr_in s{};
  s.sin_family = AF_INET;
  s.sin_port = htons(port);
  s.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  Address a;
  std::memcpy(&a.sa, &s, sizeof s);
  a.len = sizeof s;
  return a;
}

Address Ipv6Loopback(uint16_t port) {
  sockaddr_in6 s{};
  s.sin6_family = AF_INET6;
  s.sin6_port = htons(port);
  s.sin6_addr = in6addr_loopback;
  Address a;
  std::memcpy(&a.sa, &s, sizeof s);
  a.len = sizeof s;
  return a;
}

// The addresses of a loopback URL, in the order to try them; empty when
// the host is not loopback.
std::vector<Address> LoopbackAddresses(const HttpUrl& u) {
  if (IsLocalhost(u.host)) return {Ipv4Loopback(u.port), Ipv6Loopback(u.port)};
  in_addr a4{};
  if (::inet_pton(AF_INET, u.host.c_str(), &a4) == 1) {
    if (a4.s_addr == htonl(INADDR_LOOPBACK)) return {Ipv4Loopback(u.port)};
    return {};
  }
  in6_addr a6{};
  if (::inet_pton(AF_INET6, u.host.c_str(), &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6)) return {Ipv6Loopback(u.port)};
  return {};
}

// One GET in flight. Invariant: `fd` is open while phase is kConnecting,
// kSending or kReceiving; `result` is set exactly when phase is kDone.
struct Fetch {
  enum class Phase { kConnecting, kSending, kReceiving, kDone };
  std::string url;
  std::vector<Address> addresses;
  size_t next_address = 0;
  int connect_error = 0;  // the first address's, reported when none connects
  UniqueFd fd;
  Phase phase = Phase::kDone;
  std::string request;
  size_t sent = 0;
  std::string raw;
  std::optional<Result<std::string>> result;
};

void Finish(Fetch& f, Result<std::string> r) {
  f.fd.reset();
  f.phase = Fetch::Phase::kDone;
  f.result.emplace(std::move(r));
}

void Fail(Fetch& f, const std::string& why) { Finish(f, Error{f.url + ": " + why}); }

// Starts connecting to the next address; fails the fetch when none is left.
void ConnectNext(Fetch& f) {
  while (f.next_address < f.addresses.size()) {
    const Address& a = f.addresses[f.next_address++];
    f.fd.reset(::socket(a.sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    int err = errno;
    if (f.fd.valid()) {
      if (::connect(f.fd.get(), reinterpret_cast<const sockaddr*>(&a.sa), a.len) == 0) {
        f.phase = Fetch::Phase::kSending;
        return;
      }
      err = errno;
      if (err == EINPROGRESS || err == EINTR) {
        f.phase = Fetch::Phase::kConnecting;
        return;
      }
    }
    if (f.connect_error == 0) f.connect_error = err;
  }
  Fail(f, std::string("cannot connect: ") + std::strerror(f.connect_error));
}

// The socket is writable: a connect finished (or failed), or the request
// can go on.
void OnWritable(Fetch& f) {
  if (f.phase == Fetch::Phase::kConnecting) {
    int so_error = 0;
    socklen_t len = sizeof so_error;
    if (::getsockopt(f.fd.get(), SOL_SOCKET, SO_ERROR, &so_error, &len) != 0) so_error = errno;
    if (so_error != 0) {
      if (f.connect_error == 0) f.connect_error = so_error;
      ConnectNext(f);
      return;
    }
    f.phase = Fetch::Phase::kSending;
  }
  while (f.sent < f.request.size()) {
    const ssize_t n = ::send(f.fd.get(), f.request.data() + f.sent, f.request.size() - f.sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n < 0) return Fail(f, std::string("cannot send the request: ") + std::strerror(errno));
    f.sent += static_cast<size_t>(n);
  }
  f.phase = Fetch::Phase::kReceiving;
}

// The socket is readable: more of the answer, or its end.
void OnReadable(Fetch& f) {
  char buf[16384];
  const ssize_t n = ::recv(f.fd.get(), buf, sizeof buf, 0);
  if (n < 0) {
    if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) return;
    return Fail(f, std::string("cannot read the answer: ") + std::strerror(errno));
  }
  f.raw.append(buf, static_cast<size_t>(n));
  if (f.raw.size() > kMaxRaw) return Fail(f, "answer larger than " + std::to_string(kMaxRaw) + " bytes");
  HttpAnswer a = ParseHttpAnswer(f.raw, n == 0);
  if (a.state == HttpAnswer::State::kIncomplete) return;
  if (a.state == HttpAnswer::State::kBad) return Fail(f, a.detail);
  if (a.status != 200) return Fail(f, "HTTP " + std::to_string(a.status));
  Finish(f, std::move(a.body));
}

// Sets up the fetch of `url`: checked, its request made, connecting.
void Start(Fetch& f, const std::string& url) {
  f.url = url;
  Result<HttpUrl> u = ParseLoopbackUrl(url);
  if (!u) return Finish(f, u.error());
  f.addresses = LoopbackAddresses(u.value());
  f.request = "GET " + u.value().target + " HTTP/1.1\r\nHost: " + u.value().host_header +
              "\r\nUser-Agent: ix-node-agent\r\nAccept: text/plain\r\nConnection: close\r\n\r\n";
  ConnectNext(f);
}

// One poll over the fetches still going, until `deadline`; false when the
// deadline has passed (or poll failed) and nothing more can be done.
bool PollOnce(std::vector<Fetch>& fetches, Clock::time_point deadline) {
  std::vector<pollfd> fds;
  std::vector<Fetch*> owners;
  for (Fetch& f : fetches) {
    if (f.phase == Fetch::Phase::kDone) continue;
    const short events = f.phase == Fetch::Phase::kReceiving ? POLLIN : POLLOUT;
    fds.push_back(pollfd{f.fd.get(), events, 0});
    owners.push_back(&f);
  }
  if (fds.empty()) return false;
  const auto left = deadline - Clock::now();
  if (left <= Clock::duration::zero()) return false;
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
  const int n = ::poll(fds.data(), fds.size(), static_cast<int>(std::min<int64_t>(ms, 1 << 30)));
  if (n < 0) return errno == EINTR;
  for (size_t i = 0; i < fds.size(); ++i) {
    if (fds[i].revents == 0) continue;
    Fetch& f = *owners[i];
    if (f.phase == Fetch::Phase::kReceiving) {
      OnReadable(f);
    } else {
      OnWritable(f);
    }
  }
  return true;
}

}  // namespace

Result<HttpUrl> ParseLoopbackUrl(std::string_view url) {
  Result<HttpUrl> u = ParseHttpUrl(url);
  if (!u) return u;
  if (LoopbackAddresses(u.value()).empty()) {
    return Error{"URL not on this host: " + std::string(url) +
                 " (only http:// URLs to 127.0.0.1, [::1] or localhost are fetched)"};
  }
  return u;
}

std::vector<Result<std::string>> FetchLoopback(const std::vector<std::string>& urls,
                                               std::chrono::milliseconds timeout) {
  timeout = std::max(timeout, std::chrono::milliseconds(1));
  const Clock::time_point deadline = Clock::now() + timeout;
  std::vector<Fetch> fetches(urls.size());
  for (size_t i = 0; i < urls.size(); ++i) Start(fetches[i], urls[i]);
  while (PollOnce(fetches, deadline)) {
  }
  std::vector<Result<std::string>> results;
  results.reserve(fetches.size());
  for (Fetch& f : fetches) {
    if (f.phase != Fetch::Phase::kDone) {
      Fail(f, "no answer within " + std::to_string(timeout.count()) + " ms (" + std::to_string(f.raw.size()) +
                  " bytes received)");
    }
    results.push_back(std::move(*f.result));
  }
  return results;
}

}  // namespace ix
