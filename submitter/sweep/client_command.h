// The benchmark client an entry's step runs when the sweep was given none
// after "--": InferenceX's own command for the entry's scenario, built as
// its launch scripts build it (benchmarks/benchmark_lib.sh):
// - agentic-coding: `aiperf profile --scenario inferencex-agentx-mvp ...`,
//   build_replay_cmd's command line, word for word;
// - fixed-seq-len: `python3 DIR/utils/bench_serving/benchmark_serving.py
//   ...`, run_benchmark_serving's, with the arguments the recipe's
//   InferenceX launch script passes (--backend vllm, --num-prompts CONC*10,
//   --trust-remote-code).
//
// Some words are only known inside the step: the plugin exports the
// recipe's client variables (AIPERF_SERVER_URL, AIPERF_SERVER_METRICS_URLS,
// ... with the step's leased ports) and IX_PORT. Such a word is a
// reference (ClientWord) that the step's fixed /bin/sh launcher resolves
// from its environment; /bin/sh is in every container image, ixsubmit is
// not. The launcher's script is fixed text: the words are its arguments,
// never shell text, and a referenced name is checked to be a variable name
// before it is looked up.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/base/result.h"
#include "submitter/results/benchmark_env.h"

namespace ix {

// What a sweep keeps for the clients it builds (sweep.json "client_defaults").
struct ClientDefaults {
  // run_benchmark_serving's --bench-serving-dir: an InferenceX checkout as the
  // step sees it (utils/bench_serving/benchmark_serving.py in it).
  std::string bench_serving_dir = "/workspace";
  // Agentic entries' DURATION (AIPerf's profiling window, seconds) instead
  // of the matrix entry's; 0: the entry's.
  int64_t duration = 0;
};

// One argument word of a step's client. Invariant: `name` is a shell
// variable name when kind is not kLiteral.
struct ClientWord {
  enum Kind { kLiteral, kValue, kCommaList } kind = kLiteral;
  std::string text;  // kLiteral: the word; kValue: the text before the value
  std::string name;  // kValue, kCommaList: the step variable
  // kValue: text + $name. kCommaList: $name split at commas into one word each
  // (an empty item is an error in the step, as build_replay_cmd's).
};
using ClientWords = std::vector<ClientWord>;

// The environment the command is built from: `known` (the task's: the
// sweep's environment and the entry's contract) and `step` (the recipe arm's
// client variables as a plan that is not running renders them: their
// values in the step differ in the ports, so a step variable is referred
// to, and its rendered value only decides whether an optional part is
// there).
struct ClientEnvironment {
  EnvVars known, step;
  bool InStep(const std::string& name) const;
  // The step's rendered value when the step sets it, else the known one.
  std::string Get(const std::string& name) const;
};

// build_replay_cmd's words for an agentic entry whose artifacts go to
// `result_dir`/aiperf_artifacts. Errors: a WEKA_LOADER_OVERRIDE that is not
// one of the trace loaders.
Result<ClientWords> AgenticReplayWords(const ClientEnvironment& env, const std::string& result_dir);

// run_benchmark_serving's words for a fixed-seq-len entry writing
// `result_dir`/RESULT_FILENAME.json.
ClientWords BenchServingWords(const ClientEnvironment& env, const std::string& result_dir,
                              const ClientDefaults& defaults);

// The entry's client: the agentic or the fixed-seq-len command by the
// contract's SCENARIO_TYPE.
Result<ClientWords> DefaultClientWords(const ClientEnvironment& env, const std::string& result_dir,
                                       const ClientDefaults& defaults);

// The step's argv for `words`: /bin/sh -c LAUNCHER ix-client RECORD WORDS...
// The launcher sets PORT to the step's IX_PORT, resolves the references,
// and, when RECORD (a file path) is not empty, writes the command line
// there (InferenceX's benchmark_command.txt) and appends the AIPERF_*
// variables it runs with to RECORD's directory's benchmark.env; then it execs.
std::vector<std::string> LauncherArgv(const ClientWords& words, const std::string& record);

// The words as a shell would read them, references as $NAME (for --dry-run
// and the task's log).
std::string DescribeClientWords(const ClientWords& words);

}  // namespace ix
