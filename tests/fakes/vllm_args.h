// The fake engine's command line: `vllm serve MODEL [flags...]`, parsed as
// permissively as the real argparse (tests/fakes/README.md, "Flags"), plus
// the FAKE_VLLM_* switches of its environment (vllm_switches.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "vllm_kv_config.h"
#include "vllm_layout.h"
#include "vllm_switches.h"

namespace ixfake::vllm {

inline constexpr const char* kVersion = "0.0.0+fake";

// What one `vllm serve` process is asked to be. Invariants after
// parse_config: served_names is not empty, and layout keeps its own
// (vllm_layout.h): every rank in [0, dp_size), served_ranks empty only for a
// headless node.
struct Config {
  std::vector<std::string> argv;  // exactly as received, argv[0] included
  std::string model_path;
  std::vector<std::string> served_names;
  std::string host = "0.0.0.0";
  int port = 8000;
  int dp_size = 1;
  std::optional<int> dp_rank;    // --data-parallel-rank (external load balancing)
  Layout layout;                 // role, local and served ranks, the head's address
  long long max_model_len = 8192;
  Switches switches;             // the environment's, applied or not (faults_active)
  KvCacheConfig kv;              // each rank's KV cache (vllm_kv_config.h)
};

// The whole command line and environment; prints and exits for --version,
// --help (0) and any usage or switch error (2, argparse style), as vLLM does.
Config parse_config(int argc, char** argv);

// vLLM's human-readable integers: 1k = 1000, 1K = 1024, 1m = 10^6, 1M = 2^20
// (g, G alike); nullopt for anything else.
std::optional<long long> parse_human_int(const std::string& text);

}  // namespace ixfake::vllm
