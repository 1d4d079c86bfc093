// The fake engine's port before it is ready: bound but not listening, as
// vLLM holds it while the model loads (tests/fakes/README.md, "Readiness").
#pragma once

#include <string>

namespace ixfake::vllm {

// A socket bound to host:port (SO_REUSEADDR only, close-on-exec) and not
// listening: the port is taken, so a second server fails at once, but
// connections are refused. Sets bound_port (the one picked for port 0).
// When the host does not resolve or the port cannot be bound, prints vLLM's
// error and exits 1.
int reserve_port(const std::string& host, int port, int& bound_port);

}  // namespace ixfake::vllm
