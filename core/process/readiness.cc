#include "core/process/readiness.h"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>

#include <fcntl.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "core/process/tcp_peers.h"

namespace ix {
namespace {

std::string Seconds(std::chrono::steady_clock::duration d) {
  char s[32];
  std::snprintf(s, sizeof s, "%.3f", std::chrono::duration<double>(d).count());
  return s;
}

std::string Excerpt(std::string_view body) {
  std::string s(body.substr(0, 80));
  for (char& c : s) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  return "'" + s + (body.size() > 80 ? "...'" : "'");
}

// HOST:PORT as a socket address: an IPv4 or [IPv6] literal, or localhost
// (no name service: ix-stepd is linked statically, where glibc's resolver
// would need the shared libraries of its own version at run time).
bool ParseHostPort(const std::string& host_port, sockaddr_storage& out, socklen_t& len) {
  const size_t colon = host_port.rfind(':');
  if (colon == std::string::npos || colon + 1 >= host_port.size()) return false;
  std::string host = host_port.substr(0, colon);
  if (host.size() > 1 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host == "localhost") host = "127.0.0.1";
  char* end = nullptr;
  const unsigned long port = std::strtoul(host_port.c_str() + colon + 1, &end, 10);
  if (*end != '\0' || port == 0 || port > 65535) return false;
  out = {};
  auto* v4 = reinterpret_cast<sockaddr_in*>(&out);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&out);
  if (::inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<uint16_t>(port));
    len = sizeof *v4;
    return true;
  }
  if (::inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<uint16_t>(port));
    len = sizeof *v6;
    return true;
  }
  return false;
}

// tcp_listening HOST:PORT: ready when a TCP connect succeeds within
// `timeout` (servers that speak no HTTP, such as the Mooncake master).
ProbeResult TcpListening(const std::string& host_port, std::chrono::milliseconds timeout) {
  ProbeResult r;
  sockaddr_storage addr{};
  socklen_t len = 0;
  if (!ParseHostPort(host_port, addr, len)) {
    r.detail = "'" + host_port + "' is not HOST:PORT (an IP address or localhost, and a port)";
    return r;
  }
  const int fd = ::socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    r.detail = std::string("socket: ") + std::strerror(errno);
    return r;
  }
  int err = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0 ? 0 : errno;
  if (err == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    socklen_t err_len = sizeof err;
    err = ::poll(&p, 1, static_cast<int>(timeout.count())) == 1 &&
                  ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &err_len) == 0
              ? err
              : ETIMEDOUT;
  }
  ::close(fd);
  r.ready = err == 0;
  r.detail = r.ready ? "accepts connections" : "connecting to " + host_port + ": " + std::strerror(err);
  return r;
}

}  // namespace

ProbeResult EvaluateModels(long http_status, std::string_view body) {
  ProbeResult r;
  r.answered = true;
  r.http_status = http_status;
  if (http_status != 200) {
    r.detail = "HTTP " + std::to_string(http_status);
    return r;
  }
  rapidjson::Document doc;
  doc.Parse(body.data(), body.size());
  if (doc.HasParseError()) {
    r.detail = std::string("HTTP 200 but the body is not JSON (") + rapidjson::GetParseError_En(doc.GetParseError()) +
               " at offset " + std::to_string(doc.GetErrorOffset()) + "): " + Excerpt(body);
    return r;
  }
  if (!doc.IsObject() || !doc.HasMember("data") || !doc["data"].IsArray()) {
    r.detail = "HTTP 200 but the body is not a model list (expected {\"data\": [...]}): " + Excerpt(body);
    return r;
  }
  if (doc["data"].Empty()) {
    r.detail = "HTTP 200 but the model list is empty";
    return r;
  }
  r.ready = true;
  return r;
}

ProbeResult HttpGetProber::HttpOk(const std::string& url, const ProbeOptions& options) {
  return Get(url, options, nullptr);
}

ProbeResult HttpGetProber::ModelsNonEmpty(const std::string& url, const ProbeOptions& options) {
  std::string body;
  ProbeResult r = Get(url, options, &body);
  return r.answered ? EvaluateModels(r.http_status, body) : r;
}

ProbeResult HttpGetProber::Probe(const ReadinessCheck& check, const ProbeOptions& options) {
  switch (check.kind) {
    case ReadinessTemplate::Kind::kHttpOk:
      return HttpOk(check.url, options);
    case ReadinessTemplate::Kind::kModelsNonEmpty:
      return ModelsNonEmpty(check.url, options);
    case ReadinessTemplate::Kind::kTcpListening:
      return TcpListening(check.url, options.connect_timeout);
    case ReadinessTemplate::Kind::kConnected:
      break;
  }
  return Connected(check.url);
}

ProbeResult HttpGetProber::Connected(const std::string& addr) {
  ProbeResult r;
  Result<bool> c = HasEstablishedTo(addr);
  r.ready = c && c.value();
  r.detail = !c ? c.error().message : r.ready ? "connected" : "no established TCP connection to " + addr;
  return r;
}

std::chrono::milliseconds NextProbeGap(std::chrono::milliseconds waited, const WaitReadyOptions& options) {
  // The wait so far bounds how late a server may be seen: 1/16 of it.
  return std::clamp(waited / 16, std::min(options.first_interval, options.interval), options.interval);
}

Status WaitReady(const std::vector<ReadinessCheck>& checks, const WaitReadyOptions& options,
                 ReadinessProber& prober) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  for (size_t i = 0; i < checks.size(); ++i) {
    const ReadinessCheck& check = checks[i];
    const std::string name = "readiness check " + std::to_string(i + 1) + " of " + std::to_string(checks.size()) +
                             " (" + ReadinessKindName(check.kind) + " " + check.url + ")";
    ProbeResult last;
    // The last probe that had all of options.probe.timeout or got a whole
    // answer: what a probe cut short at the deadline must not hide.
    std::optional<ProbeResult> last_full;
    int probes = 0;
    const auto check_start = Clock::now();
    for (;;) {
      if (options.abort) {
        if (std::optional<std::string> why = options.abort()) {
          return Error{name + ": stopped waiting after " + Seconds(Clock::now() - start) + " s (" +
                       std::to_string(probes) + " probes): " + *why +
                       (probes ? "; last: " + last.detail : std::string())};
        }
      }
      const auto probe_start = Clock::now();
      ProbeOptions po = options.probe;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(options.deadline - probe_start);
      if (probes > 0 || left.count() > 0) {
        po.timeout = std::max(std::chrono::milliseconds(1), std::min(po.timeout, left));
      }
      last = prober.Probe(check, po);
      const bool cut = po.timeout < options.probe.timeout;
      if (!cut || last.answered) last_full = last;
      ++probes;
      if (last.ready) break;
      const auto now = Clock::now();
      if (now >= options.deadline) {
        // A probe cut short by the deadline without a whole answer (none,
        // or its headers only) says less than the last one that had its
        // full time.
        const std::string what = cut && !last.answered && last_full
                                     ? last_full->detail + " (then, cut at the deadline: " + last.detail + ")"
                                     : last.detail;
        return Error{name + " not ready after " + Seconds(now - start) + " s (" + std::to_string(probes) +
                     " probes); last: " + what};
      }
      const auto gap = NextProbeGap(std::chrono::duration_cast<std::chrono::milliseconds>(now - check_start), options);
      const auto next = std::min<Clock::time_point>(probe_start + gap, options.deadline);
      if (next > now) std::this_thread::sleep_until(next);
    }
  }
  return Ok{};
}

}  // namespace ix
