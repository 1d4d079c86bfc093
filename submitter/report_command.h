// `ixsubmit report [SWEEP_ID] [--db PATH] [-o FILE]`: the sweep (the newest
// without SWEEP_ID) as one self-contained HTML page (report/report_html.h):
// throughput per GPU against interactivity per arm with the Pareto
// frontier, TTFT against concurrency, energy per token, DEP session spread,
// the agentic-coding charts (report/agentic_charts.h) and a table of every
// entry with links to its logs. Default FILE:
// report.html in the sweep directory.
#pragma once

#include <string>
#include <vector>

namespace ix {

int RunReportCommand(const std::vector<std::string>& args);

}  // namespace ix
