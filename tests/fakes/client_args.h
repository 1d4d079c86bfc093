// ix-fake-client's command line and environment (tests/fakes/README.md,
// "ix-fake-client"): what to run against what, and where the result goes.
#pragma once

#include <optional>
#include <string>

#include "fake_common.h"
#include "random_lengths.h"

namespace ixfake::client {

// One run. Invariants after parse_config: sessions, turns, concurrency and
// max_tokens are >= 1, timeout_s > 0, url is valid and its base_path has no
// trailing "/v1"; lengths, when set, passes check_length_spec.
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
  int requests() const { return sessions * turns; }
};

// The options, then the environment: concurrency from $IX_CONC, else $CONC;
// the endpoint from $IX_ENDPOINT, else $AIPERF_SERVER_URL; the lengths from
// $ISL, $OSL, $RANDOM_RANGE_RATIO; the result file from $RESULT_FILENAME and
// $IX_RESULT_DIR. Prints the help and exits 0 for --help, a usage error and
// exits 2 for anything wrong.
Config parse_config(int argc, char** argv);

}  // namespace ixfake::client
