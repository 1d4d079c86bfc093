// ix-fake-client's command line and environment (tests/fakes/README.md,
// "ix-fake-client"): what to run against what, and where the result goes.
#pragma once

#include <string>

#include "fake_common.h"

namespace ixfake::client {

// One run. Invariants after parse_config: sessions, turns, concurrency and
// max_tokens are >= 1, timeout_s > 0, url is valid and its base_path has no
// trailing "/v1".
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
};

// The options, then $IX_CONC, $IX_ENDPOINT, $AIPERF_SERVER_URL and
// $IX_RESULT_DIR; prints the help and exits 0 for --help, a usage error and
// exits 2 for anything wrong.
Config parse_config(int argc, char** argv);

}  // namespace ixfake::client
