// The fake engine's record, vllm-<pid>.json (tests/fakes/README.md,
// "Record"): the exact argv, the whole environment, the pid and the
// EngineCore children, so a test can check what the plugin started.
#pragma once

#include <string>
#include <vector>

namespace ixfake::vllm {

// The record's JSON text (one line and a newline): `argv` as given, `env`
// from environ (the first of a repeated name, as getenv), this pid and
// engine_cores() (vllm_engine_cores.h).
std::string record_json(const std::vector<std::string>& argv);

// Writes record_json(argv) to DIR/vllm-<pid>.json through a rename; returns
// the path. On failure prints why, stops the EngineCores and exits 1.
std::string write_record(const std::string& dir, const std::vector<std::string>& argv);

}  // namespace ixfake::vllm
