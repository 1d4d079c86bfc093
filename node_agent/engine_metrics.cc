#include "node_agent/engine_metrics.h"

#include <utility>

#include "core/base/result.h"
#include "node_agent/loopback_fetch.h"

namespace ix {

std::vector<EngineReading> ReadEngineMetrics(const std::vector<std::string>& urls, std::chrono::milliseconds timeout) {
  std::vector<Result<std::string>> bodies = FetchLoopback(urls, timeout);
  std::vector<EngineReading> readings;
  readings.reserve(bodies.size());
  for (size_t i = 0; i < bodies.size(); ++i) {
    if (bodies[i]) {
      readings.push_back(ParseEngineMetrics(bodies[i].value()));
    } else {
      EngineReading failed;
      failed.error = bodies[i].error().message;
      readings.push_back(std::move(failed));
    }
  }
  return readings;
}

}  // namespace ix
