#include "submitter/report/report_html.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "submitter/report/agentic_charts.h"
#include "submitter/report/agentic_read.h"
#include "submitter/report/report_charts.h"
#include "submitter/report/report_table.h"
#include "submitter/report/report_text.h"

namespace ix {
namespace {

// The page's only styling. SVG charts carry their own colours; this lays
// out the sections, the figures and the table.
constexpr const char* kCss = R"css(
:root { color-scheme: light; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
  margin: 24px; color: #1a1a1a; background: #ffffff; line-height: 1.4; }
h1 { font-size: 1.5em; margin: 0 0 8px; }
h2 { font-size: 1.2em; border-bottom: 1px solid #cccccc; padding-bottom: 4px; margin-top: 32px; }
code, .ix-key { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; }
dl.ix-meta { display: grid; grid-template-columns: max-content auto; gap: 2px 12px; margin: 0 0 8px; }
dl.ix-meta dt { font-weight: 600; }
dl.ix-meta dd { margin: 0; }
ul.ix-counts { list-style: none; padding: 0; margin: 8px 0; display: flex; flex-wrap: wrap; gap: 8px; }
ul.ix-counts li { border: 1px solid #cccccc; border-radius: 4px; padding: 2px 8px; }
ul.ix-counts li.ix-count-failed { border: 2px solid #a50e0e; font-weight: 600; }
.ix-charts { display: flex; flex-wrap: wrap; gap: 16px; align-items: flex-start; }
figure.ix-figure { margin: 0; border: 1px solid #dddddd; border-radius: 4px; padding: 4px; max-width: 100%;
  overflow-x: auto; }
svg.ix-chart { display: block; }
h3.ix-kind { font-size: 1.05em; margin: 16px 0 8px; }
.ix-point:hover { stroke-width: 3; }
p.ix-note { border-left: 4px solid #999999; padding: 4px 8px; background: #f6f6f6; max-width: 720px; }
.ix-table-wrap { overflow-x: auto; }
table.ix-entries { border-collapse: collapse; font-size: 13px; }
table.ix-entries th, table.ix-entries td { border: 1px solid #cccccc; padding: 3px 6px; vertical-align: top;
  text-align: left; }
table.ix-entries th { background: #f0f0f0; position: sticky; top: 0; }
table.ix-entries td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.ix-entries td.ix-placement { font-size: 12px; }
table.ix-entries td.ix-state { white-space: nowrap; }
tr.ix-failed td { background: #fdecea; }
tr.ix-failed td:first-child { border-left: 4px solid #a50e0e; }
tr.ix-failed td.ix-state { font-weight: 700; color: #a50e0e; }
footer { margin-top: 32px; color: #555555; font-size: 12px; }
)css";

// The states in the header's order: the usual ones first, then any other
// in order of first appearance, each with its count.
std::vector<std::pair<std::string, size_t>> StateCounts(const ReportData& data) {
  std::vector<std::pair<std::string, size_t>> counts;
  for (const char* s : {"succeeded", "failed", "running", "pending", "cancelled"}) counts.emplace_back(s, 0);
  for (const ReportEntry& e : data.entries) {
    auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == e.state; });
    if (it == counts.end()) it = counts.insert(counts.end(), {e.state, 0});
    ++it->second;
  }
  return counts;
}

std::string Header(const ReportData& data) {
  std::string out = "<header>\n<h1>Sweep <span class=\"ix-key\">" + EscapeXml(data.sweep_id) + "</span></h1>\n";
  out += "<dl class=\"ix-meta\"><dt>mode</dt><dd>" + EscapeXml(data.mode) + "</dd><dt>generated</dt><dd>" +
         EscapeXml(data.generated) + "</dd><dt>entries</dt><dd>" + std::to_string(data.entries.size()) +
         "</dd></dl>\n<ul class=\"ix-counts\">";
  for (const auto& [state, n] : StateCounts(data)) {
    out += std::string(n > 0 && state == "failed" ? "<li class=\"ix-count ix-count-failed\">" : "<li class=\"ix-count\">") +
           EscapeXml(StateText(state.empty() ? "(none)" : state)) + ": " + std::to_string(n) + "</li>";
  }
  return out + "</ul>\n</header>\n";
}

std::string Nav(const std::vector<ConfigGroup>& groups) {
  if (groups.empty()) return "<p class=\"ix-note\">This sweep has no entries.</p>\n";
  std::string out = "<nav>\n<h2>Configurations</h2>\n<ol>\n";
  for (size_t i = 0; i < groups.size(); ++i) {
    const size_t charted = static_cast<size_t>(std::count_if(
        groups[i].entries.begin(), groups[i].entries.end(), [](const ReportEntry* e) { return e->has_result; }));
    out += "<li><a class=\"ix-key\" href=\"#" + ConfigSectionId(i) + "\">" + EscapeXml(groups[i].key) + "</a> (" +
           std::to_string(groups[i].entries.size()) + " entries, " + std::to_string(charted) +
           " with results)</li>\n";
  }
  return out + "</ol>\n</nav>\n";
}

std::string Figure(const std::string& svg) { return "<figure class=\"ix-figure\">" + svg + "</figure>\n"; }

// The fixed-seq-len charts (report_charts.h), drawn from those entries only.
std::string FixedSeqLenCharts(const ConfigGroup& group) {
  std::string out = Figure(RenderXyChart(ThroughputChart(group)));
  out += Figure(RenderXyChart(TtftChart(group)));
  if (const auto energy = EnergyChart(group)) {
    out += Figure(RenderXyChart(*energy));
  } else {
    out += "<p class=\"ix-note ix-no-energy\">No energy chart: no entry of this configuration with a result "
           "has valid power readings (J/output token).</p>\n";
  }
  if (const auto dep = DepSessionsChart(group)) out += Figure(RenderBarChart(*dep));
  return out;
}

// The agentic-coding charts (agentic_charts.h), with a note where one
// cannot be drawn or was drawn from part of a file.
std::string AgenticCharts(const ConfigGroup& group) {
  std::string out = Figure(RenderXyChart(AgenticThroughputChart(group)));
  out += Figure(RenderXyChart(TurnTtftChart(group)));
  if (std::any_of(group.entries.begin(), group.entries.end(),
                  [](const ReportEntry* e) { return e->agentic.profile_truncated; })) {
    out += "<p class=\"ix-note ix-truncated\">TTFT by turn: only the first " + std::to_string(kMaxProfileLines) +
           " records of a large profile_export.jsonl were read.</p>\n";
  }
  if (const auto hit = CacheHitChart(group)) {
    out += Figure(RenderXyChart(*hit));
  } else {
    out += "<p class=\"ix-note ix-no-cache\">No prefix-cache chart: no agentic entry of this configuration with a "
           "result has server cache metrics.</p>\n";
  }
  for (const XyChart& kv : KvUsageCharts(group)) out += Figure(RenderXyChart(kv));
  if (const auto sessions = DpSessionsChart(group)) out += Figure(RenderBarChart(*sessions));
  if (const auto hits = DpHitRateChart(group)) out += Figure(RenderBarChart(*hits));
  return out;
}

// A key's section: its fixed-seq-len charts, its agentic-coding charts, or
// both under a heading each.
std::string Section(const ConfigGroup& group, size_t index) {
  const bool fixed = HasFixedSeqLen(group), agentic = HasAgentic(group);
  std::string out = "<section class=\"ix-config\" id=\"" + ConfigSectionId(index) + "\">\n<h2 class=\"ix-key\">" +
                    EscapeXml(group.key) + "</h2>\n";
  if (fixed) {
    if (agentic) out += "<h3 class=\"ix-kind\">Fixed sequence length</h3>\n";
    out += "<div class=\"ix-charts\">\n" + FixedSeqLenCharts(group) + "</div>\n";
  }
  if (agentic) {
    out += "<h3 class=\"ix-kind\">Agentic coding (multi-turn trace replay)</h3>\n"
           "<div class=\"ix-charts ix-agentic\">\n" +
           AgenticCharts(group) + "</div>\n";
  }
  return out + "</section>\n";
}

}  // namespace

std::string RenderReport(const ReportData& data) {
  const std::vector<ConfigGroup> groups = GroupByConfig(data);
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                    "<meta name=\"generator\" content=\"ixsubmit report\">\n"
                    "<link rel=\"icon\" href=\"data:,\">\n<title>Sweep " +
                    EscapeXml(data.sweep_id) + " \xc2\xb7 report</title>\n<style>" + kCss + "</style>\n</head>\n<body>\n";
  out += Header(data);
  out += Nav(groups);
  out += "<main>\n";
  for (size_t i = 0; i < groups.size(); ++i) out += Section(groups[i], i);
  out += "<section id=\"entries\">\n<h2>Entries</h2>\n<div class=\"ix-table-wrap\">\n" + RenderEntriesTable(data) +
         "</div>\n</section>\n</main>\n";
  out += "<footer>Written by ixsubmit report. Hover over a point or bar for its values; rows marked "
         "\xe2\x9c\x97 failed.</footer>\n</body>\n</html>\n";
  return out;
}

}  // namespace ix
