#include "submitter/report/report_table.h"

#include "submitter/report/agentic_charts.h"
#include "submitter/report/report_charts.h"
#include "submitter/report/report_text.h"

namespace ix {
namespace {

// A state reduced to a safe class-name suffix ("failed", or "other").
std::string StateClass(std::string_view state) {
  if (state.empty()) return "other";
  for (const char c : state) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return "other";
  }
  return std::string(state);
}

std::string Cell(std::string_view text, std::string_view cls = "") {
  const std::string open = cls.empty() ? "<td>" : "<td class=\"" + std::string(cls) + "\">";
  return open + (text.empty() ? std::string(kNoValue) : EscapeXml(text)) + "</td>";
}

std::string NumberCell(const std::string& formatted) { return "<td class=\"num\">" + formatted + "</td>"; }

std::string FailureText(const ReportEntry& e) {
  if (e.failure_reason.empty() && e.failure_process.empty()) return "";
  std::string text = e.failure_reason.empty() ? "failed" : e.failure_reason;
  if (!e.failure_process.empty()) text += " (" + e.failure_process + ")";
  return text;
}

std::string LogLinks(const ReportEntry& e) {
  std::string out;
  for (const auto& [label, href] : e.logs) {
    if (!out.empty()) out += " \xc2\xb7 ";
    const std::string shown = EscapeXml(label.empty() ? href : label);
    out += IsSafeRelativeHref(href) ? "<a href=\"" + EscapeXml(href) + "\">" + shown + "</a>" : shown;
  }
  return out.empty() ? std::string(kNoValue) : out;
}

// The GPU prefix-cache hit rate, with the offload tier's when there is
// one ("71.3% (CPU 9.8%)"); agentic entries only.
std::string HitRateText(const ReportEntry& e) {
  const AgenticResult& a = e.agentic;
  if (!IsAgentic(e) || !a.gpu_cache_hit_rate) return std::string(kNoValue);
  std::string text = FormatPercent(*a.gpu_cache_hit_rate);
  if (a.cpu_cache_hit_rate) text += " (CPU " + FormatPercent(*a.cpu_cache_hit_rate) + ")";
  return text;
}

std::string MetricCells(const ReportEntry& e) {
  if (!e.has_result) {
    std::string none;
    for (int i = 0; i < 6; ++i) none += NumberCell(std::string(kNoValue));
    return none;
  }
  return NumberCell(FormatTokS(e.tput_per_gpu)) + NumberCell(FormatTokS(e.median_intvty)) +
         NumberCell(FormatSeconds(e.mean_ttft_s)) + NumberCell(FormatSeconds(e.p99_ttft_s)) +
         NumberCell(HitRateText(e)) +
         NumberCell(HasEnergy(e) ? FormatSignificant(*e.joules_per_output_token) : std::string(kNoValue));
}

std::string Row(const ReportEntry& e, size_t group_index) {
  const std::string state = StateClass(e.state);
  std::string row = "<tr class=\"ix-row ix-state-" + state + (e.state == "failed" ? " ix-failed" : "") + "\">";
  row += NumberCell(std::to_string(e.index));
  row += "<td><a href=\"#" + ConfigSectionId(group_index) + "\">" + EscapeXml(e.config_key) + "</a></td>";
  row += Cell(ArmLabel(e)) + Cell(IsAgentic(e) ? "agentic" : "fixed", "ix-scenario");
  row += NumberCell(std::to_string(e.conc)) + NumberCell(std::to_string(e.gpus));
  row += Cell(StateText(e.state), "ix-state");
  row += Cell(e.slurm_job) + Cell(e.placement, "ix-placement");
  row += MetricCells(e);
  row += Cell(FailureText(e), "ix-failure");
  row += "<td class=\"ix-logs\">" + LogLinks(e) + "</td></tr>\n";
  return row;
}

}  // namespace

std::string ConfigSectionId(size_t group_index) { return "config-" + std::to_string(group_index + 1); }

std::string StateText(std::string_view state) {
  if (state == "succeeded") return "\xe2\x9c\x93 succeeded";  // ✓
  if (state == "failed") return "\xe2\x9c\x97 failed";        // ✗
  if (state == "cancelled") return "\xe2\x8a\x98 cancelled";  // ⊘
  if (state == "running") return "\xe2\x96\xb6 running";      // ▶
  if (state == "pending") return "\xe2\x80\xa6 pending";      // …
  return std::string(state);
}

bool IsSafeRelativeHref(std::string_view href) {
  if (href.empty() || href.substr(0, 2) == "//") return false;
  for (const char c : href) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f || c == '\\') return false;
  }
  // A ':' before any '/', '?' or '#' would make the start a scheme.
  const size_t colon = href.find(':');
  return colon == std::string_view::npos || href.find_first_of("/?#") < colon;
}

std::string RenderEntriesTable(const ReportData& data) {
  const std::vector<ConfigGroup> groups = GroupByConfig(data);
  std::string out =
      "<table class=\"ix-entries\">\n<thead><tr><th>#</th><th>config key</th><th>arm</th><th>kind</th><th>conc</th>"
      "<th>GPUs</th><th>state</th><th>Slurm job</th><th>placement</th><th>throughput/GPU (tok/s)</th>"
      "<th>interactivity (tok/s/user)</th><th>mean TTFT (s)</th><th>p99 TTFT (s)</th><th>prefix-cache hit</th>"
      "<th>energy (J/output token)</th><th>failure</th><th>logs</th></tr></thead>\n<tbody>\n";
  for (const ReportEntry& e : data.entries) {
    size_t group_index = 0;
    while (group_index < groups.size() && groups[group_index].key != e.config_key) ++group_index;
    out += Row(e, group_index);
  }
  return out + "</tbody>\n</table>\n";
}

}  // namespace ix
