// The gates an agentic-coding result must pass, as InferenceX applies them
// after writing the result (benchmarks/benchmark_lib.sh
// run_agentic_replay_and_write_outputs): utils/agentic/validation/
// validate_agentic_result.py (AIPerf's request error rate against
// --failed-request-threshold, from profile_export_aiperf.json) and
// validate_required_agentic_server_metrics (opt-in: the server metrics
// exports exist and name a metric with the required prefix). Messages are
// Python's and the shell's, without their "ERROR: " prefix.
#pragma once

#include <string>
#include <vector>

#include "core/base/result.h"

namespace ix {

// What validate_result found. Invariant: `errors` empty means valid, and
// then `message` is the line Python prints on success.
struct AgenticValidation {
  std::vector<std::string> errors;
  std::string message;
  bool valid() const { return errors.empty(); }
};

// validate_result(artifact_dir, threshold): `artifact_dir` is
// RESULT_DIR/aiperf_artifacts (its profile_export_aiperf.json, or the first
// sorted child directory's).
AgenticValidation ValidateAgenticResult(const std::string& artifact_dir, double threshold);

// --failed-request-threshold TEXT as argparse (type=float) and main() take
// it. Errors: argparse's messages (not a float; not within [0, 1]).
Result<double> ParseFailedRequestThreshold(const std::string& text);

// validate_required_agentic_server_metrics RESULT_DIR with
// AIPERF_REQUIRED_SERVER_METRIC_PREFIX `prefix`: "" when it passes (or the
// prefix is empty), else the shell's message.
std::string ValidateRequiredServerMetrics(const std::string& result_dir, const std::string& prefix);

// Python's format(x, "g") and format(x, ".3%").
std::string PyFormatG(double x);
std::string PyFormatPercent3(double x);

}  // namespace ix
