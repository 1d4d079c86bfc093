// Fake `mooncake_master` (tests/fakes/README.md, "mooncake_master"): the
// Mooncake store's master as InferenceX's launch script starts it,
// `mooncake_master --port PORT --eviction_high_watermark_ratio=R
// --eviction_ratio=R`: it listens on PORT of every address (what a
// tcp_listening readiness check sees), accepts and keeps the connections
// the stores open, logs each, and exits 0 on SIGTERM/SIGINT. A flag it does
// not know, a missing or bad value, or a port it cannot bind is an error
// (exit 2 or 1, naming it), so a recipe that drifts from the real command
// line shows. FAKE_MOONCAKE_EXIT_AFTER_S=S makes it exit 1 S seconds after
// it started listening (a master that dies mid-run);
// FAKE_MOONCAKE_LISTEN_AFTER_S=S makes it listen only S seconds after its
// start (a master slow to come up: an engine started before it is ready
// cannot join it).
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "fake_common.h"

namespace {

[[noreturn]] void Usage(const std::string& what) {
  ixfake::usage_exit("mooncake_master (fake): %s\n"
                     "usage: mooncake_master --port PORT [--eviction_high_watermark_ratio=R] [--eviction_ratio=R]\n",
                     what.c_str());
}

// The command line: --port PORT or --port=PORT, the two ratios in (0, 1].
int ParsePort(int argc, char** argv) {
  std::optional<long long> port;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i], value;
    const size_t eq = a.find('=');
    if (eq != std::string::npos) {
      value = a.substr(eq + 1);
      a = a.substr(0, eq);
    } else if (a == "--port" && i + 1 < argc) {
      value = argv[++i];
    }
    if (a == "--port") {
      port = ixfake::parse_int(value, 1, 65535);
      if (!port) Usage("--port '" + value + "': expected a port from 1 to 65535");
    } else if (a == "--eviction_high_watermark_ratio" || a == "--eviction_ratio") {
      char* end = nullptr;
      const double r = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0' || !(r > 0 && r <= 1)) Usage(a + " '" + value + "': expected a ratio in (0, 1]");
    } else {
      Usage("unknown argument '" + std::string(argv[i]) + "'");
    }
  }
  if (!port) Usage("--port is required");
  return static_cast<int>(*port);
}

int Listen(int port) {
  const int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int zero = 0;
  ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);  // IPv4 too
  ixfake::server_socket_options(fd);
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_addr = in6addr_any;
  a.sin6_port = htons(static_cast<uint16_t>(port));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 128) != 0) {
    const int err = errno;
    ::close(fd);
    errno = err;
    return -1;
  }
  return fd;
}

volatile std::sig_atomic_t g_stop = 0;
void OnSignal(int) { g_stop = 1; }

}  // namespace

int main(int argc, char** argv) {
  ixfake::start_program("mooncake_master");
  const int port = ParsePort(argc, argv);
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  if (const char* s = std::getenv("FAKE_MOONCAKE_LISTEN_AFTER_S")) {
    if (const auto delay = ixfake::parse_seconds(s)) ixfake::sleep_s(*delay);
  }
  const int fd = Listen(port);
  if (fd < 0) {
    std::fprintf(stderr, "mooncake_master (fake): cannot listen on port %d: %s\n", port, std::strerror(errno));
    return 1;
  }
  std::optional<double> exit_after;
  if (const char* s = std::getenv("FAKE_MOONCAKE_EXIT_AFTER_S")) exit_after = ixfake::parse_seconds(s);
  const double started = ixfake::now_s();
  ixfake::log_line("master service listening on port " + std::to_string(port) + " (fake)");
  std::vector<int> clients;
  while (!g_stop) {
    if (exit_after && ixfake::now_s() - started >= *exit_after) {
      ixfake::log_line("FAKE_MOONCAKE_EXIT_AFTER_S: exiting with status 1");
      return 1;
    }
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) == 1) {
      const int c = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (c >= 0) {
        clients.push_back(c);
        ixfake::log_line("accepted a connection (" + std::to_string(clients.size()) + " open)");
      }
    }
  }
  ixfake::log_line("received a stop signal, shutting down");
  for (int c : clients) ::close(c);
  ::close(fd);
  return 0;
}
