#include "vllm_engine_cores.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <mutex>

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake_common.h"
#include "vllm_kv_config.h"

namespace ixfake::vllm {
namespace {

constexpr double kChildGraceS = 2.0;

// A forked EngineCore; alive until reaped.
struct Child {
  int rank;
  pid_t pid;
  bool alive;
};

std::mutex g_children_mutex;
std::vector<Child> g_children;  // guarded by g_children_mutex
std::atomic<bool> g_shutting_down{false};
double g_stop_delay_s = 0;      // written before any thread
bool g_exit_on_engine_death = false;  // written before any thread
std::atomic<ShutdownHook> g_shutdown_hook{nullptr};

std::string wait_status_text(int status) {
  if (WIFEXITED(status)) return strprintf("exit status %d", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return strprintf("killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
  return strprintf("status 0x%x", status);
}

// The EngineCore process of one data-parallel rank. Forked before any thread
// exists. PR_SET_PDEATHSIG fires when the forking thread (the main thread,
// which lives as long as the process) dies, so it never outlives the server.
[[noreturn]] void engine_core_main(int rank, pid_t parent, int reservation_fd) {
  std::string name = "EngineCore_DP" + std::to_string(rank);
  ::prctl(PR_SET_NAME, name.c_str(), 0, 0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  if (::getppid() != parent) _exit(1);
  if (reservation_fd >= 0) ::close(reservation_fd);
  set_log_tag(name);
  logf("engine core for data-parallel rank %d started (parent %d)", rank, static_cast<int>(parent));
  sigset_t set = handled_signals();
  for (;;) {
    int sig = 0;
    if (sigwait(&set, &sig) != 0) continue;
    if (sig == SIGUSR1) {
      logf("EngineCore encountered a fatal error (injected by FAKE_VLLM_CRASH_ENGINE_AFTER_S); exiting with status 1");
      _exit(1);
    }
    if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP) {
      logf("received %s, shutting down", strsignal(sig));
      _exit(0);
    }
  }
}

// Reaps what has exited of the children; true while any is left.
bool reap_stopped_children() {
  std::lock_guard<std::mutex> lock(g_children_mutex);
  bool any = false;
  for (auto& c : g_children) {
    if (!c.alive) continue;
    int st = 0;
    pid_t r = ::waitpid(c.pid, &st, WNOHANG);
    if (r == c.pid || (r < 0 && errno == ECHILD)) {
      c.alive = false;
    } else {
      any = true;
    }
  }
  return any;
}

void kill_children_now() {
  std::lock_guard<std::mutex> lock(g_children_mutex);
  for (auto& c : g_children) {
    if (!c.alive) continue;
    ::kill(c.pid, SIGKILL);
    int st = 0;
    ::waitpid(c.pid, &st, 0);
    c.alive = false;
  }
}

// TERM to every live child, then up to kChildGraceS for them to exit, then KILL.
void stop_children() {
  {
    std::lock_guard<std::mutex> lock(g_children_mutex);
    for (auto& c : g_children) {
      if (c.alive) ::kill(c.pid, SIGTERM);
    }
  }
  double deadline = now_s() + kChildGraceS;
  while (reap_stopped_children()) {
    if (now_s() > deadline) {
      kill_children_now();
      return;
    }
    sleep_s(0.001);
  }
}

// Reaps what has exited; returns the first unexpected death's log line
// ("" when none), for a headless node to exit on.
std::string reap_children() {
  std::lock_guard<std::mutex> lock(g_children_mutex);
  std::string death;
  for (;;) {
    int st = 0;
    pid_t pid = ::waitpid(-1, &st, WNOHANG);
    if (pid <= 0) break;
    for (auto& c : g_children) {
      if (c.pid != pid) continue;
      c.alive = false;
      if (g_shutting_down.load()) {
        logf("EngineCore_DP%d (pid %d) stopped: %s", c.rank, static_cast<int>(pid), wait_status_text(st).c_str());
        continue;
      }
      std::string line = strprintf("Engine core proc EngineCore_DP%d (pid %d) died unexpectedly: %s", c.rank,
                                   static_cast<int>(pid), wait_status_text(st).c_str());
      if (g_exit_on_engine_death) {
        logf("%s", line.c_str());
        if (death.empty()) death = line;
        continue;
      }
      // Real vLLM's API server does not notice here and keeps answering
      // /health with 200: the bug the step supervisor must catch.
      logf("%s; the API server keeps serving", line.c_str());
    }
  }
  return death;
}

}  // namespace

void set_stop_delay(double seconds) { g_stop_delay_s = seconds; }

void set_exit_on_engine_death(bool exit) { g_exit_on_engine_death = exit; }

void set_shutdown_hook(ShutdownHook hook) { g_shutdown_hook.store(hook); }

void start_engine_cores(const std::vector<int>& ranks, int reservation_fd) {
  pid_t self = ::getpid();
  for (int rank : ranks) {
    pid_t pid = ::fork();
    if (pid < 0) {
      logf("ERROR: fork failed: %s", std::strerror(errno));
      shutdown_and_exit(1, "cannot start engine cores");
    }
    if (pid == 0) engine_core_main(rank, self, reservation_fd);
    std::lock_guard<std::mutex> lock(g_children_mutex);
    g_children.push_back({rank, pid, true});
  }
}

void log_kv_cache_size(long long tokens_per_rank, long long max_model_len) {
  for (const EngineCore& c : engine_cores()) {
    const std::string tag = strprintf("(EngineCore_DP%d pid=%d) INFO", c.rank, static_cast<int>(c.pid));
    logf("%s [kv_cache_utils.py] GPU KV cache size: %s tokens", tag.c_str(), with_thousands(tokens_per_rank).c_str());
    logf("%s [kv_cache_utils.py] Maximum concurrency for %s tokens per request: %.2fx", tag.c_str(),
         with_thousands(max_model_len).c_str(),
         static_cast<double>(tokens_per_rank) / static_cast<double>(std::max(max_model_len, 1LL)));
  }
}

std::vector<EngineCore> engine_cores() {
  std::lock_guard<std::mutex> lock(g_children_mutex);
  std::vector<EngineCore> out;
  for (const auto& c : g_children) out.push_back({c.rank, c.pid});
  return out;
}

void crash_engine_core(int rank) {
  std::lock_guard<std::mutex> lock(g_children_mutex);
  for (const auto& c : g_children) {
    if (c.rank != rank || !c.alive) continue;
    logf("fault FAKE_VLLM_CRASH_ENGINE_AFTER_S: crashing EngineCore_DP%d (pid %d)", c.rank, static_cast<int>(c.pid));
    ::kill(c.pid, SIGUSR1);
  }
}

void signal_loop() {
  sigset_t set = handled_signals();
  for (;;) {
    int sig = 0;
    if (sigwait(&set, &sig) != 0) continue;
    switch (sig) {
      case SIGCHLD:
        if (std::string death = reap_children(); !death.empty()) shutdown_and_exit(1, death);
        break;
      case SIGTERM:
      case SIGINT:
      case SIGHUP: shutdown_and_exit(0, strprintf("received %s", strsignal(sig)));
      default: break;
    }
  }
}

bool shutdown_started() { return g_shutting_down.load(); }

void shutdown_and_exit(int code, const std::string& reason) {
  static std::mutex once;
  once.lock();  // never released: a second caller waits for the _exit
  g_shutting_down.store(true);
  logf("%s: shutting down API server and engine cores", reason.c_str());
  if (ShutdownHook hook = g_shutdown_hook.load(); hook != nullptr) hook(code, reason);
  stop_children();
  if (g_stop_delay_s > 0) {
    logf("releasing resources (FAKE_VLLM_STOP_DELAY_S=%g)", g_stop_delay_s);
    sleep_s(g_stop_delay_s);
  }
  logf("shutdown complete, exiting with status %d", code);
  _exit(code);
}

}  // namespace ixfake::vllm
