// The head of a multi-node fake engine (Role::kHead, vllm_layout.h): listens
// on the join address (--data-parallel-address:--data-parallel-rpc-port, or
// --master-addr:--master-port), admits headless nodes by the join protocol
// (vllm_join.h), holds the API back until every expected node is ready, and
// ends the process with status 1 when a node's connection is lost, as an
// engine death would end real vLLM (tests/fakes/README.md, "Multi-node").
#pragma once

#include "vllm_args.h"

namespace ixfake::vllm {

// Binds and listens on the join address (exits 1 naming it and the flags
// when it cannot), starts the accept thread, and installs the shutdown hook
// that tells every joined node BYE (status 0) or FAILED (any other). Call
// after the EngineCores are forked, once.
void start_head(const Config& cfg);

// Blocks until every expected node has joined and said READY, logging what
// it still waits for every 10 s. No deadline: like a model load, the step's
// readiness timeout bounds it.
void wait_for_nodes();

}  // namespace ixfake::vllm
