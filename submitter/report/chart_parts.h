// What the report's chart builders (report_charts.h for fixed-seq-len,
// agentic_charts.h for agentic-coding entries) share: a config key's
// entries (ConfigGroup), its entries by arm, tooltip parts, paired series
// styles, the throughput-interactivity chart with its Pareto frontier, and
// bars per data-parallel rank. Pointers are into the ReportData the group
// was made from, which must outlive them.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "submitter/report/report_data.h"
#include "submitter/report/svg_bars.h"
#include "submitter/report/svg_chart.h"

namespace ix {

inline constexpr const char* kDot = " \xc2\xb7 ";  // " · " between a tooltip's parts

// The entries of one config key, in sweep order.
struct ConfigGroup {
  std::string key;
  std::vector<const ReportEntry*> entries;
};

// One arm's entries (arm as ArmLabel names it), sorted by conc, then in
// sweep order.
struct ArmEntries {
  std::string arm;
  std::vector<const ReportEntry*> entries;
};

// The arm a chart names: the entry's arm, and for an agentic entry with
// KV offloading the tier ("dep4 + cpu offload"), since offloading changes
// what the arm's cache can hold.
std::string ArmLabel(const ReportEntry& e);

// The entries of `group` that `keep` accepts, by ArmLabel in order of
// first appearance.
std::vector<ArmEntries> ByArm(const ConfigGroup& group, const std::function<bool(const ReportEntry&)>& keep);

// "dep4 · conc 64": how a tooltip starts; " · entry 3": how it ends.
std::string Who(const ReportEntry& e);
std::string EntryTag(const ReportEntry& e);

// The two series of arm i that share colour and shape: the first solid,
// the second dashed and hollow (mean and p99; GPU and CPU tier).
std::pair<SeriesStyle, SeriesStyle> PairedStyles(size_t i);

// Throughput per GPU against interactivity: a series per arm, a point per
// entry labelled with its conc, joined in conc order; the Pareto frontier
// over all arms.
XyChart ThroughputInteractivity(const std::vector<ArmEntries>& arms, const std::string& kind,
                                const std::string& title);

// A bar chart with a group per entry (by arm, then conc) and a series per
// DP rank ("rank 0" ...: as many as the most ranks an entry has).
// `values` gives an entry's value per rank (NaN: none, not drawn);
// `describe` a value as its tooltip says it ("12 sessions").
struct RankBarsSpec {
  std::string kind, title, y_label;
  std::function<std::vector<double>(const ReportEntry&)> values;
  std::function<std::string(double)> describe;
};
std::optional<BarChart> RankBarChart(const std::vector<ArmEntries>& arms, const RankBarsSpec& spec);

}  // namespace ix
