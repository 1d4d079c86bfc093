#include "submitter/report/report_charts.h"

#include <algorithm>

#include "submitter/report/report_text.h"

namespace ix {
namespace {

bool Charted(const ReportEntry& e) { return e.has_result && !IsAgentic(e); }

}  // namespace

std::vector<ConfigGroup> GroupByConfig(const ReportData& data) {
  std::vector<ConfigGroup> groups;
  for (const ReportEntry& e : data.entries) {
    auto it = std::find_if(groups.begin(), groups.end(), [&](const ConfigGroup& g) { return g.key == e.config_key; });
    if (it == groups.end()) it = groups.insert(groups.end(), ConfigGroup{e.config_key, {}});
    it->entries.push_back(&e);
  }
  return groups;
}

bool HasFixedSeqLen(const ConfigGroup& group) {
  return std::any_of(group.entries.begin(), group.entries.end(), [](const ReportEntry* e) { return !IsAgentic(*e); });
}

bool HasAgentic(const ConfigGroup& group) {
  return std::any_of(group.entries.begin(), group.entries.end(), [](const ReportEntry* e) { return IsAgentic(*e); });
}

bool HasEnergy(const ReportEntry& e) { return e.has_result && e.power_valid && e.joules_per_output_token.has_value(); }

XyChart ThroughputChart(const ConfigGroup& group) {
  return ThroughputInteractivity(ByArm(group, Charted), "throughput-interactivity",
                                 "Throughput per GPU vs interactivity");
}

XyChart TtftChart(const ConfigGroup& group) {
  XyChart chart = NamedChart<XyChart>("ttft", "Time to first token vs concurrency",
                                      "concurrency (requests in flight, log2 scale)", "time to first token (s)");
  chart.log2_x = true;
  const auto arms = ByArm(group, Charted);
  for (size_t i = 0; i < arms.size(); ++i) {
    const auto [mean_style, p99_style] = PairedStyles(i);
    ChartSeries mean{arms[i].arm + " mean", mean_style, {}};
    ChartSeries p99{arms[i].arm + " p99", p99_style, {}};
    for (const ReportEntry* e : arms[i].entries) {
      const double x = static_cast<double>(e->conc);
      mean.points.push_back({x, e->mean_ttft_s,
                             Who(*e) + kDot + "mean TTFT " + FormatSeconds(e->mean_ttft_s) + " s" + EntryTag(*e), ""});
      p99.points.push_back({x, e->p99_ttft_s,
                            Who(*e) + kDot + "p99 TTFT " + FormatSeconds(e->p99_ttft_s) + " s" + EntryTag(*e), ""});
    }
    chart.series.push_back(std::move(mean));
    chart.series.push_back(std::move(p99));
  }
  return chart;
}

std::optional<XyChart> EnergyChart(const ConfigGroup& group) {
  const auto arms = ByArm(group, [](const ReportEntry& e) { return HasEnergy(e) && !IsAgentic(e); });
  if (arms.empty()) return std::nullopt;
  XyChart chart = NamedChart<XyChart>("energy", "Energy per output token vs throughput per GPU",
                                      "throughput per GPU (tok/s/GPU)", "energy per output token (J/token)");
  for (size_t i = 0; i < arms.size(); ++i) {
    ChartSeries s{arms[i].arm, DefaultStyle(i), {}};
    for (const ReportEntry* e : arms[i].entries) {
      std::string tip = Who(*e) + kDot + FormatSignificant(*e->joules_per_output_token) + " J/output token" + kDot +
                        FormatTokS(e->tput_per_gpu) + " tok/s/gpu";
      if (e->avg_power_w) tip += kDot + FormatFixed(*e->avg_power_w, 0) + " W average";
      s.points.push_back({e->tput_per_gpu, *e->joules_per_output_token, tip + EntryTag(*e), std::to_string(e->conc)});
    }
    chart.series.push_back(std::move(s));
  }
  return chart;
}

std::optional<BarChart> DepSessionsChart(const ConfigGroup& group) {
  const auto sessions = [](const ReportEntry& e) {
    return std::vector<double>(e.sessions_per_rank.begin(), e.sessions_per_rank.end());
  };
  return RankBarChart(ByArm(group, [](const ReportEntry& e) { return Charted(e) && !e.sessions_per_rank.empty(); }),
                      {"dep-sessions", "Sessions per data-parallel rank", "sessions served (count)", sessions,
                       [](double v) { return FormatFixed(v, 0) + " sessions"; }});
}

}  // namespace ix
