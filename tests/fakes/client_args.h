// ix-fake-client's command line and environment (tests/fakes/README.md,
// "ix-fake-client"): what to run against what, and where the result goes.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "fake_common.h"
#include "random_lengths.h"

namespace ixfake::client {

// What a run as InferenceX's benchmark_serving.py (`ix-fake-client
// --benchmark-serving ARGS...`, client_serving_args.h) adds to a Config: how
// each request is sent and what the result file says of the command line.
// Invariants after parse_serving_args: backend is one the fake speaks
// (chat == (backend == "openai-chat")); path starts with "/" and ends in
// "completions" ("chat/completions" when chat); warmups >= 0;
// max_concurrency, when set, >= 1; percentile_metrics holds known metric
// names only, in benchmark_serving.py's order (ttft, tpot, itl, e2el).
struct ServingOptions {
  std::string backend = "vllm";
  bool chat = false;                   // openai-chat: messages; else a completions prompt
  std::string path = "/v1/completions";  // --endpoint, after the base URL
  std::string tokenizer_id;            // --tokenizer, else --model
  std::string tokenizer_mode = "auto";
  std::optional<int> max_concurrency;  // null in the result when not given
  int warmups = 0;
  bool ignore_eos = false;
  bool profile = false;
  bool save_result = false;
  std::string result_dir;              // --result-dir ("" for the current directory)
  bool use_chat_template = false;
  bool dsv4 = false;
  bool trust_remote_code = false;
  std::vector<std::string> percentile_metrics = {"ttft", "tpot", "itl", "e2el"};
};

// One run. Invariants after parse_config: sessions, turns, concurrency and
// max_tokens are >= 1, timeout_s > 0, url is valid; lengths, when set, passes
// check_length_spec. Without `serving` (the sessions mode) url's base_path
// has no trailing "/v1". With it (benchmark_serving.py's mode): turns == 1,
// sessions is --num-prompts, lengths is set, model is not empty, stream and
// keep_going are true, and `out` is "" when the result file takes
// benchmark_serving.py's default name (client_result.h).
struct Config {
  int sessions = 8;
  int turns = 3;
  int concurrency = 4;
  bool stream = true;
  bool keep_going = false;
  int max_tokens = 16;
  double timeout_s = 60;
  std::string session_prefix = "sess-";
  std::string endpoint;
  HttpUrl url;
  std::string model;  // "" until given or discovered
  std::string out;
  bool aiperf_session_header_var = false;  // AIPERF_HTTP_X_SESSION_ID_FROM_CORRELATION_ID=1
  // $ISL and $OSL (with $RANDOM_RANGE_RATIO and --seed): every request's
  // input and output length drawn as benchmark_serving.py draws them; unset:
  // short prompts and --max-tokens, as before.
  std::optional<LengthSpec> lengths;
  std::optional<ServingOptions> serving;  // set by --benchmark-serving
  int requests() const { return sessions * turns; }
};

// The options, then the environment: concurrency from $IX_CONC, else $CONC;
// the endpoint from $IX_ENDPOINT, else $AIPERF_SERVER_URL; the lengths from
// $ISL, $OSL, $RANDOM_RANGE_RATIO; the result file from $RESULT_FILENAME and
// $IX_RESULT_DIR. Prints the help and exits 0 for --help, a usage error and
// exits 2 for anything wrong. With "--benchmark-serving" first, the rest is
// benchmark_serving.py's command line (client_serving_args.h) and the
// environment is not read.
Config parse_config(int argc, char** argv);

}  // namespace ixfake::client
