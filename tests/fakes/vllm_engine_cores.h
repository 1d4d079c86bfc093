// The fake engine's processes: one EngineCore_DP<r> child per local
// data-parallel rank (tests/fakes/README.md, "Processes" and "Signals"), the
// API server's signal thread that reaps them, and the one way the process
// ends: stop every child, then _exit.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace ixfake::vllm {

// One EngineCore child as the record lists it.
struct EngineCore {
  int rank;
  pid_t pid;
};

// Seconds every shutdown takes after the children stopped (real vLLM frees
// GPU memory and NCCL state: FAKE_VLLM_STOP_DELAY_S). Set before any thread.
void set_stop_delay(double seconds);

// Forks one EngineCore per rank, before any thread exists, with every
// handled signal blocked (fake_common.h, handled_signals). A child closes
// `reservation_fd` (the bound port, vllm_port.h) and dies with the forking
// thread (PR_SET_PDEATHSIG). A failed fork stops those started and exits 1.
void start_engine_cores(const std::vector<int>& ranks, int reservation_fd);

// A headless node (vllm_layout.h) ends when one of its EngineCores dies, as
// vLLM's headless engine manager does: shutdown_and_exit(1). The API server
// of a head or single node keeps serving instead (the real bug). Set before
// any thread.
void set_exit_on_engine_death(bool exit);

// Called once at the start of shutdown_and_exit, before the children are
// stopped, with its code and reason: the multi-node link tells its peers
// (vllm_head.h, vllm_headless.h). May be set from any thread, once its
// state is complete.
using ShutdownHook = void (*)(int code, const std::string& reason);
void set_shutdown_hook(ShutdownHook hook);

// The children started, in rank order, dead or alive.
std::vector<EngineCore> engine_cores();

// vLLM's capacity lines, once the model is "loaded", for each EngineCore
// started here, tagged as vLLM prefixes its engine processes' output:
// `(EngineCore_DP0 pid=1236) INFO [kv_cache_utils.py] GPU KV cache size:
// 327,680 tokens`, then the maximum concurrency at max_model_len (what
// InferenceX reads as the KV pool, summed over the tags).
void log_kv_cache_size(long long tokens_per_rank, long long max_model_len);

// FAKE_VLLM_CRASH_ENGINE_AFTER_S: the EngineCore of `rank`, if alive,
// exits with status 1 (SIGUSR1); the API server keeps serving.
void crash_engine_core(int rank);

// The API server's signal thread: reaps children as they die (logged, as
// vLLM's "died unexpectedly" line; a headless node then exits 1) and shuts
// down on TERM, INT or HUP.
[[noreturn]] void signal_loop();

// True once shutdown_and_exit has begun: what a peer says from then on is
// the echo of this process's own end, not news.
bool shutdown_started();

// TERM to every child, up to 2 s grace, KILL, reap, the stop delay, then
// _exit(code). Safe from any thread; the first caller wins and the others
// wait for the exit.
[[noreturn]] void shutdown_and_exit(int code, const std::string& reason);

}  // namespace ixfake::vllm
