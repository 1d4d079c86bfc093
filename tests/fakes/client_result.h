// ix-fake-client's result file (tests/fakes/README.md, "Result"): one
// record per request and a summary (percentiles, ranks used, whether every
// session stayed on one rank).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "client_args.h"

namespace ixfake::client {

// One request (one turn of a session). A failed request has a non-empty
// error; rank is unknown (nullopt) when the answer did not say.
struct Record {
  std::string session;
  int turn = 0;
  double latency_ms = 0;
  std::optional<double> ttft_ms;
  std::optional<int> rank;
  int status = 0;  // HTTP status; 0 when no response came
  std::string error;
  int completion_tokens = 0;  // the engine's usage
  int prompt_tokens = 0;      // the engine's usage
  int input_len = 0;          // the prompt's tokens by the client's count (what input_lens lists)
  int max_tokens = 0;         // asked for (with ignore_eos when the lengths are drawn)
};

// What the result's summary says of the records. session_ranks holds -1 for
// a successful turn whose rank is unknown; first_failure points into the
// records summarized (the first failed one in their order).
struct Summary {
  int failed = 0;
  const Record* first_failure = nullptr;
  std::vector<double> latencies;
  std::vector<double> ttfts;
  std::set<int> ranks;
  std::map<std::string, std::set<int>> session_ranks;

  bool sessions_on_one_rank() const;
};

Summary summarize(const std::vector<Record>& records);

// The result file's text: first benchmark_serving.py's result as it saves
// it (save_result without --save-detailed, InferenceX's flags: random
// dataset, request rate inf, percentiles 90, 99, 99.9), the same keys in the
// same order with the same types, by its rules (serving_metrics.h): the
// settings, the benchmark window (`start_unix` to `end_unix`), counts and
// token totals, throughputs, input_lens/output_lens, then mean, median, std
// and percentiles of TTFT, TPOT, ITL and E2EL in ms. Then the fake's own
// keys: the run's settings, the records and the summary. With cfg.serving
// (benchmark_serving.py's mode) backend, tokenizer_id, max_concurrency (null
// without --max-concurrency) and the metrics (--percentile-metrics) follow
// its command line. No key of the
// fake's own ends in "ms" or has "tpot" in it: InferenceX's
// process_result.py converts every such key.
std::string result_json(const Config& cfg, const std::vector<Record>& records, const Summary& summary,
                        double start_unix, double end_unix);

// benchmark_serving.py's "date": local time as "%Y%m%d-%H%M%S".
std::string result_date(double unix_s);

}  // namespace ixfake::client
