// The fake engine's switches: FAKE_VLLM_* environment variables that inject
// the failures real vLLM is known for (tests/fakes/README.md, "Fault
// switches"), and fault_loop, which fires the timed ones once ready.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ixfake::vllm {

// The fault switches: what goes wrong, and when after ready.
struct Faults {
  double start_delay_s = 0.05;     // FAKE_VLLM_START_DELAY_S: the model load
  bool never_ready = false;
  bool never_join = false;         // a headless node never connects to its head
  std::optional<double> crash_engine_after_s;
  std::optional<double> exit0_after_s;
  std::optional<double> hang_after_s;
  int crash_rank = -1;             // a local rank; -1: none on this node
  std::optional<double> stall_after_s;  // FAKE_VLLM_STALL_AFTER_S: token generation stops
  std::optional<int> stall_rank;        // FAKE_VLLM_STALL_RANK: a global rank; nullopt: every rank
  bool stall_metrics = false;           // FAKE_VLLM_STALL_METRICS: the API server's event loop wedges too
};

// The switches as they apply to this process. Every variable is parsed even
// when FAKE_VLLM_FAULT_ONLY_IF_ARG turns the faults off, so a typo is an
// error either way; when faults_active is false `faults` keeps its defaults
// (the fields after it always apply).
struct Switches {
  std::string record_dir = ".";    // FAKE_VLLM_RECORD_DIR
  std::string fault_only_if_arg;   // FAKE_VLLM_FAULT_ONLY_IF_ARG ("" when unset)
  bool faults_active = true;
  Faults faults;
  double token_delay_s = 0;        // not a fault: per generated token (vllm_latency.h)
  double token_delay_per_seq_s = 0;  // not a fault: added per other sequence on the rank
  double prefill_s_per_1k = 0;     // not a fault: per 1000 prompt tokens
  double stop_delay_s = 0;         // not a fault: added to every shutdown
  double join_timeout_s = 60;      // not a fault: how long a headless node tries to reach its head
  std::optional<double> kv_load_s_per_1k;        // not a fault: per 1000 tokens loaded from the CPU KV tier
  std::optional<long long> num_gpu_blocks;       // not a fault: KV blocks per rank (vllm_kv_config.h)
  std::optional<long long> mooncake_bytes;       // not a fault: a Mooncake store's bytes per rank
};

// Reads the environment for a process with this argv (matched against
// FAKE_VLLM_FAULT_ONLY_IF_ARG) running local_ranks of dp_size (the default
// crash rank is the last local one; FAKE_VLLM_CRASH_ENGINE_RANK names a
// global rank, and crashes nothing on a node that does not run it;
// FAKE_VLLM_STALL_RANK is a global rank below dp_size too). A malformed
// value, or FAKE_VLLM_STALL_RANK or FAKE_VLLM_STALL_METRICS=1 without
// FAKE_VLLM_STALL_AFTER_S (they would stall nothing), prints why and exits 2.
Switches parse_switches(const std::vector<std::string>& argv, const std::vector<int>& local_ranks, int dp_size);

// The "model load": sleeps FAKE_VLLM_START_DELAY_S, or forever with
// FAKE_VLLM_NEVER_READY (the caller never becomes ready).
void load_model(const Faults& faults);

// The ranks a stall stops among those this process serves: stall_rank if it
// is one of them (none otherwise: another process or node serves it), else
// every served rank.
std::vector<int> stalled_ranks(const std::optional<int>& stall_rank, const std::vector<int>& served);

// The timed faults only the API server can apply (vllm_api.h); both are
// empty on a headless node, which has no API.
struct ApiFaults {
  std::function<void()> hang;   // FAKE_VLLM_HANG_AFTER_S: hold every request from now on
  std::function<void()> stall;  // FAKE_VLLM_STALL_AFTER_S: stop token generation
};

// Sleeps until each timed fault is due (ready_at + its delay, in order) and
// fires it: crash an EngineCore, exit 0, or ask the API to hang or stall.
// Runs in its own thread; returns when none is left.
void fault_loop(const Faults& faults, const ApiFaults& api, double ready_at);

// What a fault does to a thread that must never answer again: sleeps until
// the process ends (a signal's shutdown_and_exit), forever.
[[noreturn]] void hold_forever();

}  // namespace ixfake::vllm
