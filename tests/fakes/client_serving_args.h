// ix-fake-client --benchmark-serving ARGS...: InferenceX's client command
// line (utils/bench_serving/benchmark_serving.py, as benchmarks/
// benchmark_lib.sh's run_benchmark_serving builds it) parsed into the run it
// asks for (tests/fakes/README.md, "ix-fake-client", "benchmark_serving.py's
// command line"). Only the flags that command uses, plus --seed, are
// accepted; any other is an error naming it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "client_args.h"

namespace ixfake::client {

// What parse_serving_args made of a command line: exactly one of a config,
// help asked for (-h/--help), or an error message (argparse's wording where
// it has one, naming the flag; no "error: " prefix).
struct ServingParse {
  std::optional<Config> config;
  bool help = false;
  std::string error;
};

// The usage text of the --benchmark-serving mode.
extern const char* const kServingUsage;

// Parses benchmark_serving.py's arguments (those after --benchmark-serving)
// with argparse's rules: "--flag value" or "--flag=value", a repeated flag's
// last value wins, no abbreviations. The config's invariants are
// client_args.h's Config and ServingOptions ones; defaults are
// benchmark_serving.py's (--num-prompts 1000, --random-input-len 1024,
// --random-output-len 128, --random-range-ratio 1.0, --seed 0, --backend
// vllm, --endpoint /v1/completions, --base-url http://127.0.0.1:8000, no
// concurrency limit, no warmups). Reads no environment.
ServingParse parse_serving_args(const std::vector<std::string>& args);

// Where benchmark_serving.py saves its result without --result-filename:
// "{backend}-infqps[-concurrency{C}]-{last part of the model}-{date}.json",
// in --result-dir when given.
std::string default_result_path(const Config& cfg, const std::string& date);

}  // namespace ixfake::client
