#include "vllm_headless.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <thread>

#include <unistd.h>

#include "fake_common.h"
#include "vllm_engine_cores.h"
#include "vllm_join.h"
#include "vllm_link.h"

namespace ixfake::vllm {
namespace {

// Between two connection attempts (ZeroMQ's default reconnect interval).
constexpr double kRetryIntervalS = 0.1;
// One attempt's longest wait for a SYN to be answered.
constexpr double kConnectAttemptS = 2.0;

// The connection to the head, once welcomed; read by the shutdown hook.
std::shared_ptr<LineSocket> g_link;

// The shutdown hook: the head hears why this node stops.
void tell_head(int code, const std::string& reason) {
  if (g_link) g_link->send_line(code == 0 ? std::string(kBye) : kFailedPrefix + reason);
}

[[noreturn]] void fail(const std::string& message) {
  logf("ERROR: %s", message.c_str());
  std::fprintf(stderr, "ERROR: %s\n", message.c_str());
  shutdown_and_exit(1, message);
}

// Connects to the head, retrying until the join deadline.
std::shared_ptr<LineSocket> connect_head(const Layout& l, const std::string& name, double timeout_s) {
  const double deadline = now_s() + timeout_s;
  for (int attempt = 0;; ++attempt) {
    std::string error;
    double left = deadline - now_s();
    int fd = connect_tcp(l.join_host, l.join_port, std::clamp(left, 0.05, kConnectAttemptS), error);
    if (fd >= 0) return std::make_shared<LineSocket>(fd);
    if (now_s() >= deadline) {
      fail(strprintf("cannot join the head node at %s within %g s (FAKE_VLLM_JOIN_TIMEOUT_S): %s", name.c_str(),
                     timeout_s, error.c_str()));
    }
    if (attempt == 0) {
      logf("the head node at %s does not answer yet (%s); retrying for up to %g s", name.c_str(), error.c_str(),
           timeout_s);
    }
    sleep_s(std::min(kRetryIntervalS, deadline - now_s()));
  }
}

// HELLO, then the head's answer by the join deadline (at least 1 s more).
void say_hello(LineSocket& link, const Config& cfg, const std::string& name, double deadline) {
  if (!link.send_line(hello_line(hello_for(cfg.layout, static_cast<long>(::getpid()))))) {
    fail("the head node at " + name + " closed the connection before the hello");
  }
  std::string line, error;
  LineSocket::Read r = link.read_line(line, std::max(deadline, now_s() + 1), error);
  if (r == LineSocket::Read::kTimeout) fail("the head node at " + name + " did not answer the hello in time");
  if (r != LineSocket::Read::kLine) fail("the head node at " + name + " did not answer the hello: " + error);
  if (line.rfind(kRefusedPrefix, 0) == 0) {
    fail("the head node at " + name + " refused this node: " + line.substr(std::strlen(kRefusedPrefix)));
  }
  if (line != kWelcome) fail("the head node at " + name + " answered the hello with '" + line + "'");
}

// The connection to the head for as long as it lasts; ends the process.
[[noreturn]] void watch_head(std::shared_ptr<LineSocket> link, std::string name) {
  for (;;) {
    std::string line, error;
    LineSocket::Read r = link->read_line(line, -1, error);
    if (shutdown_started()) shutdown_and_exit(1, "");  // the head answers this node's own end: wait for the exit
    if (r == LineSocket::Read::kClosed) fail("lost the connection to the head node at " + name + ": " + error);
    if (r == LineSocket::Read::kTooLong) fail("the head node at " + name + " sent a line too long");
    if (line == kBye) shutdown_and_exit(0, "the head node at " + name + " shut down (BYE)");
    if (line.rfind(kFailedPrefix, 0) == 0) {
      fail("the head node at " + name + " failed: " + line.substr(std::strlen(kFailedPrefix)));
    }
    logf("ignored '%s' from the head node", line.c_str());
  }
}

}  // namespace

void run_headless(const Config& cfg) {
  const Layout& l = cfg.layout;
  const Switches& sw = cfg.switches;
  const std::string name = strprintf("%s:%d (%s)", l.join_host.c_str(), l.join_port, l.join_flags.c_str());
  logf("Launching %zu data parallel engine(s) in headless mode (%s), with head node address %s",
       l.local_ranks.size(), describe_layout(l).c_str(), name.c_str());
  if (sw.faults.never_join) {
    logf("fault FAKE_VLLM_NEVER_JOIN: this node never connects to the head node at %s", name.c_str());
    hold_forever();
  }
  const double deadline = now_s() + sw.join_timeout_s;
  std::shared_ptr<LineSocket> link = connect_head(l, name, sw.join_timeout_s);
  say_hello(*link, cfg, name, deadline);
  g_link = link;
  set_shutdown_hook(tell_head);
  logf("joined the head node at %s from %s", name.c_str(), local_name(link->fd()).c_str());
  std::thread(watch_head, link, name).detach();
  load_model(sw.faults);
  log_kv_cache_size(cfg.kv.gpu_tokens(), cfg.max_model_len);
  link->send_line(kReady);
  logf("engines loaded; told the head node READY");
  fault_loop(sw.faults, ApiFaults{}, now_s());  // no API here to hang or stall
  hold_forever();
}

}  // namespace ixfake::vllm
