// A headless node of a multi-node fake engine (Role::kHeadless,
// vllm_layout.h): no HTTP API; it connects to the head's join address,
// retrying for FAKE_VLLM_JOIN_TIMEOUT_S, says HELLO, "loads" for
// FAKE_VLLM_START_DELAY_S, says READY, and then lives as long as the
// connection does: the head's BYE ends it with status 0, a lost connection
// or the head's FAILED with status 1, as does the death of one of its
// EngineCores (tests/fakes/README.md, "Multi-node").
#pragma once

#include "vllm_args.h"

namespace ixfake::vllm {

// The headless node's whole life, after the EngineCores are forked and the
// signal thread runs. Exits 1 naming the head's address, port and flags
// when it cannot join in time or the head refuses it.
[[noreturn]] void run_headless(const Config& cfg);

}  // namespace ixfake::vllm
