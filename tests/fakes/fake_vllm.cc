// Fake `vllm` (installed as `vllm` in the fakes bin directory): stands in for
// `vllm serve MODEL [flags...]` where no GPU and no model exist. It accepts any
// flag (vllm_args.h), records its argv and environment (vllm_record.h), forks
// one EngineCore child per local data-parallel rank (vllm_engine_cores.h),
// listens only once "ready" (vllm_port.h), serves the OpenAI endpoints,
// /health and /metrics (vllm_api.h), and injects the failures real vLLM is
// known for (vllm_switches.h). Across nodes (vllm_layout.h) the head waits
// for its headless nodes over TCP before it is ready (vllm_head.h), and a
// headless node joins it and serves nothing (vllm_headless.h). This file is
// the start-up sequence.
// Documentation: tests/fakes/README.md.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fake_common.h"
#include "http_server.h"
#include "vllm_api.h"
#include "vllm_args.h"
#include "vllm_engine_cores.h"
#include "vllm_head.h"
#include "vllm_headless.h"
#include "vllm_port.h"
#include "vllm_record.h"
#include "vllm_switches.h"

namespace {

using ixfake::logf;
using namespace ixfake::vllm;
namespace http = ixfake::http;

bool is_directory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

void log_started(const Config& cfg, int port, const std::string& record_path) {
  const Layout& l = cfg.layout;
  std::string ranks;
  for (int r : l.local_ranks) ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
  if (l.role != Role::kHeadless) {
    logf("vLLM API server version %s (fake): serving %s as '%s' on %s:%d, data-parallel size %d, local ranks [%s]%s",
         kVersion, cfg.model_path.c_str(), cfg.served_names.front().c_str(), cfg.host.c_str(), port, cfg.dp_size,
         ranks.c_str(), l.role == Role::kHead ? ", head of a multi-node engine" : "");
  }
  logf("argv and environment recorded in %s", record_path.c_str());
  const Switches& sw = cfg.switches;
  if (!sw.fault_only_if_arg.empty()) {
    logf("FAKE_VLLM_FAULT_ONLY_IF_ARG='%s': fault switches %s", sw.fault_only_if_arg.c_str(),
         sw.faults_active ? "apply (an argument matches)" : "ignored (no argument matches)");
  }
  if (sw.faults.never_join && l.role != Role::kHeadless) {
    logf("FAKE_VLLM_NEVER_JOIN: not a headless node, nothing to do");
  }
}

// Trades the reserved socket for the listening one and serves until the
// process ends; the timed faults start counting now.
[[noreturn]] void serve(const Config& cfg, int reservation_fd, int port) {
  Engine engine(cfg);
  http::Server svr;
  svr.set_socket_options(ixfake::server_socket_options);
  engine.install(svr);

  ::close(reservation_fd);
  if (std::string err = svr.bind_to_port(cfg.host, port); !err.empty()) {
    logf("ERROR: cannot listen on %s:%d: %s", cfg.host.c_str(), port, err.c_str());
    std::fprintf(stderr, "ERROR: cannot listen on %s:%d\n", cfg.host.c_str(), port);
    shutdown_and_exit(1, "bind failed");
  }
  double ready_at = ixfake::now_s();
  logf("Starting vLLM API server on http://%s:%d", cfg.host.c_str(), port);
  logf("Application startup complete.");
  std::thread([&engine, ready_at] {
    fault_loop(engine.cfg().switches.faults, ApiFaults{[&engine] { engine.hang(); }, [&engine] { engine.stall(); }},
               ready_at);
  }).detach();
  svr.listen_after_bind();
  shutdown_and_exit(0, "server stopped");
}

}  // namespace

int main(int argc, char** argv) {
  ixfake::start_program("vllm");
  Config cfg = parse_config(argc, argv);
  set_stop_delay(cfg.switches.stop_delay_s);
  if (!is_directory(cfg.switches.record_dir)) {
    std::fprintf(stderr, "vllm (fake): FAKE_VLLM_RECORD_DIR '%s' is not a directory\n",
                 cfg.switches.record_dir.c_str());
    return 1;
  }

  // FAKE_VLLM_FAULTHANDLER=1: as a vLLM run with faulthandler registered on SIGUSR1.
  if (const char* fh = std::getenv("FAKE_VLLM_FAULTHANDLER"); fh != nullptr && *fh != '\0') {
    if (std::string(fh) != "1") {
      std::fprintf(stderr, "vllm (fake): FAKE_VLLM_FAULTHANDLER='%s': expected 1 (or unset)\n", fh);
      return 2;
    }
    ixfake::enable_faulthandler_dump();
  }
  // Every thread inherits this mask; signals are taken with sigwait.
  sigset_t set = ixfake::handled_signals();
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);

  // A headless node serves no API, so it holds no port.
  const Role role = cfg.layout.role;
  int port = cfg.port;
  int reservation_fd = role == Role::kHeadless ? -1 : reserve_port(cfg.host, cfg.port, port);
  set_exit_on_engine_death(role == Role::kHeadless);
  start_engine_cores(cfg.layout.local_ranks, reservation_fd);
  if (role == Role::kHead) start_head(cfg);
  std::thread(signal_loop).detach();

  std::string record_path = write_record(cfg.switches.record_dir, cfg.argv);
  log_started(cfg, port, record_path);
  if (role == Role::kHeadless) run_headless(cfg);
  load_model(cfg.switches.faults);
  if (role == Role::kHead) wait_for_nodes();
  serve(cfg, reservation_fd, port);
}
