#include "submitter/sweep/stream_options.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/un.h>
#include <unistd.h>

#include <filesystem>

#include "core/base/text.h"
#include "core/process/http_probe.h"

namespace ix {
namespace {

Error Bad(const std::string& option, const std::string& why) { return Error{"argument " + option + ": " + why}; }

// An absolute, normal path (no "." or ".." parts, no doubled '/').
bool IsNormalAbsolute(const std::string& p) {
  if (p.empty() || p[0] != '/') return false;
  const std::string normal = std::filesystem::path(p).lexically_normal().string();
  return normal == p || normal + "/" == p;
}

Status CheckUrl(const std::string& url) {
  const std::string why = "'" + url + "' is not an http:// or https:// URL of the collector as the nodes reach it "
                          "(e.g. http://login1:9478)";
  std::string plain;
  if (url.rfind("http://", 0) == 0) plain = url;
  else if (url.rfind("https://", 0) == 0) plain = "http://" + url.substr(8);  // a TLS proxy before the collector
  else return Bad("--collector-url", why);
  if (Result<HttpUrl> u = ParseHttpUrl(plain); !u) return Bad("--collector-url", why + ": " + u.error().message);
  return Ok{};
}

Status CheckNodeResults(const std::string& dir) {
  if (!IsNormalAbsolute(dir)) {
    return Bad("--node-results", "'" + dir + "' must be an absolute path without '.' or '..' parts (a directory "
                                 "on each node, e.g. /tmp/ix-results)");
  }
  if (dir.find_first_of(",:") != std::string::npos) {
    return Bad("--node-results", "'" + dir + "' holds ',' or ':', which a container mount cannot carry");
  }
  return Ok{};
}

Status CheckAgentSocket(const std::string& path) {
  if (!IsNormalAbsolute(path)) {
    return Bad("--agent-socket", "'" + path + "' must be an absolute path (default " + kDefaultAgentSocket + ")");
  }
  if (path.size() >= sizeof(sockaddr_un{}.sun_path)) {
    return Bad("--agent-socket", "'" + path + "' is longer than a unix socket path may be (" +
                                     std::to_string(sizeof(sockaddr_un{}.sun_path) - 1) + " bytes)");
  }
  return Ok{};
}

}  // namespace

std::string ListenAddress::ToString() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<ListenAddress> ParseListenAddress(const std::string& text, const std::string& option) {
  const std::string why = "'" + text + "' is not ADDR:PORT (e.g. 0.0.0.0:0 for every interface and a free port, "
                          "[::]:9478, login1:9478; PORT 0 to 65535)";
  ListenAddress a;
  std::string port;
  if (!text.empty() && text[0] == '[') {
    const size_t close = text.find("]:");
    if (close == std::string::npos) return Bad(option, why);
    a.host = text.substr(1, close - 1);
    port = text.substr(close + 2);
    in6_addr v6{};
    if (::inet_pton(AF_INET6, a.host.c_str(), &v6) != 1) return Bad(option, why);
  } else {
    const size_t colon = text.rfind(':');
    if (colon == std::string::npos) return Bad(option, why);
    a.host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (a.host.find(':') != std::string::npos) return Bad(option, why + "; write an IPv6 address in brackets");
  }
  uint64_t n = 0;
  if (a.host.empty() || !ParseUnsigned(port, n) || n > 65535) return Bad(option, why);
  for (char c : a.host) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f || c == '/') return Bad(option, why);
  }
  a.port = static_cast<int>(n);
  return a;
}

bool TakeStreamOption(const std::string& arg, const std::function<std::string()>& value, StreamOptions& o) {
  const std::string name = arg.substr(0, arg.find('='));
  if (name == "--collector-listen") o.listen = value();
  else if (name == "--collector-url") o.collector_url = value();
  else if (name == "--node-results") o.node_results = value();
  else if (name == "--agent-socket") o.agent_socket = value();
  else if (arg == "--no-collector") o.no_collector = true;
  else return false;
  o.given.push_back(name);
  return true;
}

Status CheckStreamOptions(const StreamOptions& o) {
  if (o.no_collector) {
    for (const std::string& g : o.given) {
      if (g == "--collector-listen" || g == "--collector-url" || g == "--node-results") {
        return Bad(g, std::string("not with --no-collector") +
                          (g == "--node-results" ? " (results reach the sweep directory only through the collector)"
                                                 : " (there is no collector)"));
      }
    }
  }
  for (const std::string& g : o.given) {
    if ((g == "--collector-url" && o.collector_url.empty()) || (g == "--node-results" && o.node_results.empty())) {
      return Bad(g, "expected a value, got ''");
    }
  }
  if (Result<ListenAddress> a = ParseListenAddress(o.listen, "--collector-listen"); !a) return a.error();
  if (!o.collector_url.empty()) {
    if (Status s = CheckUrl(o.collector_url); !s) return s;
  }
  if (!o.node_results.empty()) {
    if (Status s = CheckNodeResults(o.node_results); !s) return s;
  }
  return CheckAgentSocket(o.agent_socket);
}

std::string CollectorUrlFor(const StreamOptions& o, const std::string& hostname, int port) {
  if (!o.collector_url.empty()) return o.collector_url;
  return "http://" + hostname + ":" + std::to_string(port);
}

std::string ThisHostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

}  // namespace ix
