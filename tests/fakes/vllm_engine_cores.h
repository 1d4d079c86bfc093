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

// The children started, in rank order, dead or alive.
std::vector<EngineCore> engine_cores();

// FAKE_VLLM_CRASH_ENGINE_AFTER_S: the EngineCore of `rank`, if alive,
// exits with status 1 (SIGUSR1); the API server keeps serving.
void crash_engine_core(int rank);

// The API server's signal thread: reaps children as they die (logged, as
// vLLM's "died unexpectedly" line) and shuts down on TERM, INT or HUP.
[[noreturn]] void signal_loop();

// TERM to every child, up to 2 s grace, KILL, reap, the stop delay, then
// _exit(code). Safe from any thread; the first caller wins and the others
// wait for the exit.
[[noreturn]] void shutdown_and_exit(int code, const std::string& reason);

}  // namespace ixfake::vllm
