#include "submitter/report_command.h"

#include <ctime>
#include <filesystem>
#include <iostream>
#include <optional>

#include "core/base/file_text.h"
#include "submitter/report/report_html.h"
#include "submitter/report_source.h"

namespace ix {
namespace {

constexpr char kUsage[] =
    "Usage: ixsubmit report [SWEEP_ID] [--db PATH] [-o FILE]\n"
    "Writes the sweep (the newest without SWEEP_ID) as one self-contained HTML page: throughput per GPU\n"
    "against interactivity per arm (Pareto frontier), TTFT against concurrency, energy per output token,\n"
    "DEP session spread; for agentic-coding entries throughput against interactivity, TTFT by turn,\n"
    "prefix-cache hit rate against concurrency, KV cache usage over time and per-DP-rank sessions and\n"
    "hit rates; and every entry with its kind, state, placement, failure and logs.\n"
    "FILE defaults to report.html in the sweep directory.\n";

std::string UtcNow() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

}  // namespace

int RunReportCommand(const std::vector<std::string>& args) {
  std::optional<std::string> db, id, out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") return std::cout << kUsage, 0;
    if ((a == "--db" || a == "-o" || a == "--output") && i + 1 < args.size()) (a == "--db" ? db : out) = args[++i];
    else if (a.rfind("--db=", 0) == 0) db = a.substr(5);
    else if (a.rfind("--output=", 0) == 0) out = a.substr(9);
    else if (!id && !a.empty() && a[0] != '-') id = a;
    else return std::cerr << "ixsubmit report: error: unrecognized argument " << a << "\n" << kUsage, 2;
  }
  Result<SweepResults> s = LoadSweepResults(db, id);
  if (!s) return std::cerr << "ixsubmit report: " << s.error().message << "\n", 1;
  const std::string path = out.value_or(s.value().sweep.sweep_dir + "/report.html");
  const std::string dir = std::filesystem::path(path).parent_path().string();
  const ReportData data = MakeReportData(s.value(), dir.empty() ? "." : dir, UtcNow());
  if (Status w = WriteFileAtomic(path, RenderReport(data)); !w) {
    return std::cerr << "ixsubmit report: " << w.error().message << "\n", 1;
  }
  std::printf("ixsubmit report: %s (%zu entries) -> %s\n", data.sweep_id.c_str(), data.entries.size(), path.c_str());
  return 0;
}

}  // namespace ix
