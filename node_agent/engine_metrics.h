// ReadEngineMetrics: the engines' /metrics texts read over loopback
// (libcurl, loopback_fetch.h) and parsed. The parsing itself, pure and
// shared with ix-stepd (a static program without libcurl), is
// core/process/engine_metrics.h; this header brings it along, so the
// agent's users include one header.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "core/process/engine_metrics.h"

namespace ix {

// Reads each URL's /metrics text (loopback URLs only: loopback_fetch.h)
// at once, all within `timeout`, and parses it. One reading per URL, in
// order; one that failed has `error` set ("http://127.0.0.1:8000/metrics:
// ..."). Blocks for at most `timeout` (plus the parsing).
std::vector<EngineReading> ReadEngineMetrics(const std::vector<std::string>& urls,
                                             std::chrono::milliseconds timeout = std::chrono::milliseconds(500));

}  // namespace ix
