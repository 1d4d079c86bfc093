// The fake vllm-router's command line, vllm-router 0.1.14's as clap parses
// it (tests/fakes/README.md, "vllm-router"), and its FAKE_ROUTER_* switches.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "fake_common.h"

namespace ixfake::router {

inline constexpr const char* kVersion = "0.1.14+fake";

// One routing target: a worker URL, or one data-parallel rank of it.
struct Target {
  std::string key;  // "http://host:port" or "http://host:port@rank"
  HttpUrl url;
  std::optional<int> rank;
};

// The router's settings. Invariant after parse_config: each target's url is
// valid; with intra_dp > 1 every worker URL gives intra_dp targets, ranked.
struct Config {
  std::vector<Target> targets;
  std::string host = "127.0.0.1";
  int port = 30000;
  std::string prometheus_host = "127.0.0.1";
  int prometheus_port = 29000;
  int request_timeout_s = 1800;
  int intra_dp = 1;
  double start_delay_s = 0;
  std::optional<double> exit_after_s;
  std::optional<double> stall_after_s;  // FAKE_ROUTER_STALL_AFTER_S: stop forwarding, keep answering /health
};

// The options and the environment; prints and exits for --help and
// --version (0) and for any error (2, as clap does).
Config parse_config(int argc, char** argv);

}  // namespace ixfake::router
