// `ixsubmit serve`: the collector in the foreground (collector.h) until
// SIGTERM or SIGINT. Prints "ixsubmit serve: listening on ADDR:PORT" once
// connections are accepted; refused and failed requests go to stderr, one
// line each. The token comes from a file only, never from argv.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"

namespace ix {

inline constexpr const char* kDefaultCollectorListen = "127.0.0.1:9478";

// HOST:PORT, or [IPV6]:PORT; PORT 0 to 65535 (0: any free port).
struct ListenAddress {
  std::string host;
  int port = 0;
};
Result<ListenAddress> ParseListenAddress(std::string_view text);
// The address as ParseListenAddress reads it ("[::1]:9478" for IPv6).
std::string FormatListenAddress(const std::string& host, int port);

struct ServeCommandLine {
  ListenAddress listen;
  std::optional<std::string> db;
  std::string token_file;
  size_t threads = 8;
  bool help = false;
};
// Errors name the flag and what it takes (exit status 2).
Result<ServeCommandLine> ParseServeCommandLine(const std::vector<std::string>& args);

int RunServeCommand(const std::vector<std::string>& args);

}  // namespace ix
