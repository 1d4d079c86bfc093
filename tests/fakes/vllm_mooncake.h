// What vLLM's Mooncake store connector reads before its workers serve: the
// JSON file MOONCAKE_CONFIG_PATH names (global_segment_size, this worker's
// share of the store; master_server_address, the mooncake_master it
// registers with), and the connection to that master, made at start-up: a
// master that is not (yet) listening stops the engine, as the real store's
// setup does.
#pragma once

#include <optional>
#include <string>

namespace ixfake::vllm {

// The parts of the config the fake uses. Invariants after a successful
// parse: segment_bytes >= 1, 1 <= master_port <= 65535.
struct MooncakeStoreConfig {
  long long segment_bytes = 0;
  std::string master_host;
  int master_port = 0;
};

// A size as vLLM's _parse_global_segment_size reads it: an integer, or a
// number with a unit GB, MB, KB or B (powers of 1024, any case); nullopt if
// malformed or not positive.
std::optional<long long> parse_segment_size(const std::string& text);

// The config file's text to `out`; "" or the error (naming the field).
std::string parse_mooncake_config(const std::string& text, MooncakeStoreConfig& out);

// MOONCAKE_CONFIG_PATH read (unset: vLLM's ValueError) and parsed, then the
// master connected within `timeout_s`; the connection is kept for the
// process's life, as the store client keeps its own. "" or the error.
std::string join_mooncake_store(MooncakeStoreConfig& out, double timeout_s);

}  // namespace ixfake::vllm
