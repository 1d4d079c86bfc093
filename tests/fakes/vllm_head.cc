#include "vllm_head.h"

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <sys/socket.h>

#include "fake_common.h"
#include "vllm_engine_cores.h"
#include "vllm_join.h"
#include "vllm_link.h"

namespace ixfake::vllm {
namespace {

// How long a new connection has to say HELLO before it is dropped (a port
// probe, a stray client).
constexpr double kHelloTimeoutS = 10;

// The head's state, shared by the accept thread and one thread per
// connection. Invariant: `nodes` holds exactly the connections whose hello
// was admitted.
struct HeadState {
  std::mutex mutex;
  std::condition_variable changed;  // a node became ready
  std::unique_ptr<JoinTable> table;
  std::vector<std::shared_ptr<LineSocket>> nodes;
  std::string join_name;  // "HOST:PORT (--flags)"
};
HeadState g_head;

// The shutdown hook: every joined node hears why the head stops.
void tell_nodes(int code, const std::string& reason) {
  std::vector<std::shared_ptr<LineSocket>> nodes;
  {
    std::lock_guard<std::mutex> lock(g_head.mutex);
    nodes = g_head.nodes;
  }
  for (const auto& n : nodes) n->send_line(code == 0 ? std::string(kBye) : kFailedPrefix + reason);
}

// An admitted node's connection ended: the engine lost part of itself.
[[noreturn]] void lose_node(const Hello& h, const std::string& peer, const std::string& how) {
  if (shutdown_started()) shutdown_and_exit(1, how);  // the node answers this head's own end: wait for the exit
  std::string what = strprintf("lost %s (pid %ld at %s): %s", describe_hello(h).c_str(), h.pid, peer.c_str(),
                               how.c_str());
  logf("ERROR: %s", what.c_str());
  std::fprintf(stderr, "ERROR: %s\n", what.c_str());
  shutdown_and_exit(1, what);
}

// The hello of a new connection, admitted; false (connection answered and
// dropped) otherwise.
bool admit(const std::shared_ptr<LineSocket>& sock, const std::string& peer, Hello& hello) {
  std::string line, error;
  LineSocket::Read r = sock->read_line(line, now_s() + kHelloTimeoutS, error);
  if (r != LineSocket::Read::kLine) {
    logf("join port: dropped a connection from %s that sent no hello (%s)", peer.c_str(),
         r == LineSocket::Read::kTimeout ? "nothing within 10 s" : r == LineSocket::Read::kTooLong ? "line too long"
                                                                                               : error.c_str());
    return false;
  }
  auto h = parse_hello(line, error);
  if (h) {
    std::lock_guard<std::mutex> lock(g_head.mutex);
    error = g_head.table->admit(*h);
    if (error.empty()) g_head.nodes.push_back(sock);
  }
  if (!error.empty()) {
    logf("join port: refused %s: %s", peer.c_str(), error.c_str());
    sock->send_line(kRefusedPrefix + error);
    return false;
  }
  hello = *h;
  sock->send_line(kWelcome);
  logf("%s (pid %ld) joined from %s; waiting for it to load", describe_hello(hello).c_str(), hello.pid, peer.c_str());
  return true;
}

// One connection on the join port, for as long as it lasts.
void serve_connection(int fd) {
  auto sock = std::make_shared<LineSocket>(fd);
  const std::string peer = peer_name(fd);
  Hello hello;
  if (!admit(sock, peer, hello)) return;
  for (;;) {
    std::string line, error;
    LineSocket::Read r = sock->read_line(line, -1, error);
    if (r == LineSocket::Read::kClosed) lose_node(hello, peer, error);
    if (r == LineSocket::Read::kTooLong) lose_node(hello, peer, "a line too long");
    if (line == kBye) lose_node(hello, peer, "it shut down (BYE)");
    if (line.rfind(kFailedPrefix, 0) == 0) lose_node(hello, peer, "it failed: " + line.substr(std::strlen(kFailedPrefix)));
    if (line != kReady) {
      logf("join port: ignored '%s' from %s", line.c_str(), peer.c_str());
      continue;
    }
    std::string left;
    {
      std::lock_guard<std::mutex> lock(g_head.mutex);
      g_head.table->mark_ready(hello);
      left = g_head.table->missing();
    }
    g_head.changed.notify_all();
    logf("%s is ready; %s", describe_hello(hello).c_str(),
         left.empty() ? "every node has joined" : ("still waiting for " + left).c_str());
  }
}

[[noreturn]] void accept_loop(int listen_fd) {
  for (;;) {
    int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno != EINTR) sleep_s(0.1);  // EMFILE and the like: try again later, without spinning
      continue;
    }
    std::thread(serve_connection, fd).detach();
  }
}

}  // namespace

void start_head(const Config& cfg) {
  const Layout& l = cfg.layout;
  g_head.table = std::make_unique<JoinTable>(l);
  g_head.join_name = strprintf("%s:%d (%s)", l.join_host.c_str(), l.join_port, l.join_flags.c_str());
  std::string error;
  int fd = listen_tcp(l.join_host, l.join_port, error);
  if (fd < 0) {
    std::fprintf(stderr, "ERROR: cannot listen for the other nodes on %s: %s\n", g_head.join_name.c_str(),
                 error.c_str());
    shutdown_and_exit(1, "cannot listen on " + g_head.join_name + ": " + error);
  }
  set_shutdown_hook(tell_nodes);
  logf("head of a multi-node engine (%s): listening for the other nodes on %s", describe_layout(l).c_str(),
       g_head.join_name.c_str());
  std::thread(accept_loop, fd).detach();
}

void wait_for_nodes() {
  std::unique_lock<std::mutex> lock(g_head.mutex);
  while (!g_head.table->complete()) {
    logf("waiting for %s to join on %s", g_head.table->missing().c_str(), g_head.join_name.c_str());
    g_head.changed.wait_for(lock, std::chrono::seconds(10), [] { return g_head.table->complete(); });
  }
}

}  // namespace ixfake::vllm
