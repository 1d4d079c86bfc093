#include "submitter/report/chart_parts.h"

#include <algorithm>

#include "submitter/report/pareto.h"
#include "submitter/report/report_text.h"

namespace ix {

std::string ArmLabel(const ReportEntry& e) {
  const std::string& tier = e.agentic.kv_offloading;
  if (!IsAgentic(e) || tier.empty() || tier == "none") return e.arm;
  return e.arm + " + " + tier + " offload";
}

std::vector<ArmEntries> ByArm(const ConfigGroup& group, const std::function<bool(const ReportEntry&)>& keep) {
  std::vector<ArmEntries> arms;
  for (const ReportEntry* e : group.entries) {
    if (!keep(*e)) continue;
    const std::string arm = ArmLabel(*e);
    auto it = std::find_if(arms.begin(), arms.end(), [&](const ArmEntries& a) { return a.arm == arm; });
    if (it == arms.end()) it = arms.insert(arms.end(), ArmEntries{arm, {}});
    it->entries.push_back(e);
  }
  for (ArmEntries& a : arms) {
    std::stable_sort(a.entries.begin(), a.entries.end(),
                     [](const ReportEntry* x, const ReportEntry* y) { return x->conc < y->conc; });
  }
  return arms;
}

std::string Who(const ReportEntry& e) { return ArmLabel(e) + kDot + "conc " + std::to_string(e.conc); }

std::string EntryTag(const ReportEntry& e) { return std::string(kDot) + "entry " + std::to_string(e.index); }

std::pair<SeriesStyle, SeriesStyle> PairedStyles(size_t i) {
  SeriesStyle solid = DefaultStyle(i);
  solid.dash.clear();
  SeriesStyle dashed = solid;
  dashed.dash = "7 4";
  dashed.hollow = true;
  return {solid, dashed};
}

XyChart ThroughputInteractivity(const std::vector<ArmEntries>& arms, const std::string& kind,
                                const std::string& title) {
  XyChart chart = NamedChart<XyChart>(kind, title, "interactivity (tok/s/user)", "throughput per GPU (tok/s/GPU)");
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

std::optional<BarChart> RankBarChart(const std::vector<ArmEntries>& arms, const RankBarsSpec& spec) {
  if (arms.empty()) return std::nullopt;
  BarChart chart = NamedChart<BarChart>(spec.kind,
                                        spec.title,
                                        arms.size() == 1 ? arms[0].arm + " entries (concurrency)" : "entries (arm, concurrency)",
                                        spec.y_label);
  size_t ranks = 0;
  for (const ArmEntries& a : arms) {
    for (const ReportEntry* e : a.entries) {
      BarGroup g;
      g.label = arms.size() == 1 ? "conc " + std::to_string(e->conc) : a.arm + kDot + std::to_string(e->conc);
      g.values = spec.values(*e);
      for (size_t r = 0; r < g.values.size(); ++r) {
        g.tooltips.push_back(Who(*e) + kDot + "rank " + std::to_string(r) + kDot + spec.describe(g.values[r]) +
                             EntryTag(*e));
      }
      ranks = std::max(ranks, g.values.size());
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
