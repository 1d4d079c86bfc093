// libFuzzer target for the engines' /metrics text the node agent reads for
// hang detection (node_agent/engine_metrics.h): arbitrary bytes as the
// text (ParseEngineMetrics), and as a metric name (the first line) and the
// text after it (SumPrometheusSamples). A job's server writes that text,
// so any bytes must be safe. Crashes, leaks, UB and hangs are bugs, and so
// is: a reading that is set but not finite (no evidence for the hang
// watch, and it would be compared and rendered), from one engine or from
// a step's engines combined (CombineReadings); an error from text that was
// read; a family's reading other than the sum SumPrometheusSamples gives.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "node_agent/engine_metrics.h"

namespace {

bool FiniteWhenSet(const std::optional<double>& v) { return !v || std::isfinite(*v); }

bool Same(const std::optional<double>& a, const std::optional<double>& b) {
  return a.has_value() == b.has_value() && (!a || *a == *b);
}

void CheckReading(const ix::EngineReading& r, const std::string& what) {
  ixfuzz::Check(FiniteWhenSet(r.requests_running), what + ": requests running set but not finite");
  ixfuzz::Check(FiniteWhenSet(r.generation_tokens), what + ": generation tokens set but not finite");
  ixfuzz::Check(r.error.empty(), what + ": an error from text that was read: " + r.error);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = ixfuzz::AsText(data, size);
  const ix::EngineReading r = ix::ParseEngineMetrics(text);
  CheckReading(r, "one engine");
  ixfuzz::Check(Same(r.requests_running, ix::SumPrometheusSamples(text, ix::kVllmRequestsRunning)) &&
                    Same(r.generation_tokens, ix::SumPrometheusSamples(text, ix::kVllmGenerationTokens)),
                "a reading that is not its family's sum");
  CheckReading(ix::CombineReadings({r, r}), "two engines combined");

  const std::vector<std::string> parts = ixfuzz::Split(text, '\n', 2);
  const std::optional<double> sum = ix::SumPrometheusSamples(parts.back(), parts.front());
  ixfuzz::Check(FiniteWhenSet(sum), "a sum of samples set but not finite");
  return 0;
}
