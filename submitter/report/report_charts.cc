#include "submitter/report/report_charts.h"

#include <algorithm>
#include <functional>

#include "submitter/report/pareto.h"
#include "submitter/report/report_text.h"

namespace ix {
namespace {

constexpr const char* kDot = " \xc2\xb7 ";  // " · " between a tooltip's parts

// One arm's entries, sorted by conc (then sweep order).
struct ArmEntries {
  std::string arm;
  std::vector<const ReportEntry*> entries;
};

// The entries of `group` that `keep` accepts, by arm in order of first
// appearance.
std::vector<ArmEntries> ByArm(const ConfigGroup& group, const std::function<bool(const ReportEntry&)>& keep) {
  std::vector<ArmEntries> arms;
  for (const ReportEntry* e : group.entries) {
    if (!keep(*e)) continue;
    auto it = std::find_if(arms.begin(), arms.end(), [&](const ArmEntries& a) { return a.arm == e->arm; });
    if (it == arms.end()) it = arms.insert(arms.end(), ArmEntries{e->arm, {}});
    it->entries.push_back(e);
  }
  for (ArmEntries& a : arms) {
    std::stable_sort(a.entries.begin(), a.entries.end(),
                     [](const ReportEntry* x, const ReportEntry* y) { return x->conc < y->conc; });
  }
  return arms;
}

bool Charted(const ReportEntry& e) { return e.has_result; }

// "dep4 · conc 64": how a tooltip starts.
std::string Who(const ReportEntry& e) { return e.arm + kDot + "conc " + std::to_string(e.conc); }

std::string EntryTag(const ReportEntry& e) { return std::string(kDot) + "entry " + std::to_string(e.index); }

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

bool HasEnergy(const ReportEntry& e) { return e.has_result && e.power_valid && e.joules_per_output_token.has_value(); }

XyChart ThroughputChart(const ConfigGroup& group) {
  XyChart chart;
  chart.kind = "throughput-interactivity";
  chart.title = "Throughput per GPU vs interactivity";
  chart.x_label = "interactivity (tok/s/user)";
  chart.y_label = "throughput per GPU (tok/s/GPU)";
  const auto arms = ByArm(group, Charted);
  std::vector<ParetoPoint> all;
  for (size_t i = 0; i < arms.size(); ++i) {
    ChartSeries s{arms[i].arm, DefaultStyle(i), {}};
    for (const ReportEntry* e : arms[i].entries) {
      s.points.push_back({e->median_intvty, e->tput_per_gpu,
                          Who(*e) + kDot + FormatTokS(e->tput_per_gpu) + " tok/s/gpu" + kDot +
                              FormatTokS(e->median_intvty) + " tok/s/user" + EntryTag(*e),
                          std::to_string(e->conc)});
      all.push_back({e->median_intvty, e->tput_per_gpu});
    }
    chart.series.push_back(std::move(s));
  }
  for (const size_t k : ParetoFrontier(all)) chart.frontier.emplace_back(all[k].x, all[k].y);
  return chart;
}

XyChart TtftChart(const ConfigGroup& group) {
  XyChart chart;
  chart.kind = "ttft";
  chart.title = "Time to first token vs concurrency";
  chart.x_label = "concurrency (requests in flight, log2 scale)";
  chart.y_label = "time to first token (s)";
  chart.log2_x = true;
  const auto arms = ByArm(group, Charted);
  for (size_t i = 0; i < arms.size(); ++i) {
    // The arm's two series share colour and shape; p99 is dashed and hollow.
    SeriesStyle mean_style = DefaultStyle(i);
    mean_style.dash.clear();
    SeriesStyle p99_style = mean_style;
    p99_style.dash = "7 4";
    p99_style.hollow = true;
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
  const auto arms = ByArm(group, HasEnergy);
  if (arms.empty()) return std::nullopt;
  XyChart chart;
  chart.kind = "energy";
  chart.title = "Energy per output token vs throughput per GPU";
  chart.x_label = "throughput per GPU (tok/s/GPU)";
  chart.y_label = "energy per output token (J/token)";
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
  const auto arms =
      ByArm(group, [](const ReportEntry& e) { return e.has_result && !e.sessions_per_rank.empty(); });
  if (arms.empty()) return std::nullopt;
  BarChart chart;
  chart.kind = "dep-sessions";
  chart.title = "Sessions per data-parallel rank";
  chart.x_label = arms.size() == 1 ? arms[0].arm + " entries (concurrency)" : "entries (arm, concurrency)";
  chart.y_label = "sessions served (count)";
  size_t ranks = 0;
  for (const ArmEntries& a : arms) {
    for (const ReportEntry* e : a.entries) {
      BarGroup g;
      g.label = arms.size() == 1 ? "conc " + std::to_string(e->conc) : e->arm + kDot + std::to_string(e->conc);
      for (size_t r = 0; r < e->sessions_per_rank.size(); ++r) {
        g.values.push_back(static_cast<double>(e->sessions_per_rank[r]));
        g.tooltips.push_back(Who(*e) + kDot + "rank " + std::to_string(r) + kDot +
                             std::to_string(e->sessions_per_rank[r]) + " sessions" + EntryTag(*e));
      }
      ranks = std::max(ranks, e->sessions_per_rank.size());
      chart.groups.push_back(std::move(g));
    }
  }
  for (size_t r = 0; r < ranks; ++r) {
    chart.series_names.push_back("rank " + std::to_string(r));
    chart.bar_labels.push_back(std::to_string(r));
  }
  return chart;
}

}  // namespace ix
