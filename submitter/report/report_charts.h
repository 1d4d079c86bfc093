// The charts of one config key's fixed-seq-len entries, as chart specs
// (XyChart, BarChart) built from its entries, so what each chart holds is
// tested apart from the SVG. Only fixed-seq-len entries (not IsAgentic)
// with has_result are charted; agentic entries have agentic_charts.h.
//
// What each gives (the browser test's expected counts follow from this):
// - ThroughputChart ("throughput-interactivity"): a series per arm (arms in
//   order of first appearance), a point per entry with a result, labelled
//   with its conc, joined in conc order; the Pareto frontier over all arms.
// - TtftChart ("ttft"): two series per arm, "ARM mean" then "ARM p99" (same
//   colour and shape; p99 dashed and hollow), a point per entry each.
// - EnergyChart ("energy"): a series per arm with a point per entry that has
//   power_valid and joules_per_output_token; none such: no chart.
// - DepSessionsChart ("dep-sessions"): a group of bars per entry with
//   non-empty sessions_per_rank (by arm, then conc), a series per DP rank
//   ("rank 0" ...: as many as the most ranks an entry has), a bar per rank
//   of each entry; none such: no chart. Grouped by entry because the
//   question is whether the router spread one entry's sessions evenly:
//   equal bars within a group, near its dashed mean line, say yes.
#pragma once

#include <optional>
#include <vector>

#include "submitter/report/chart_parts.h"

namespace ix {

// The config keys of `data` in order of first appearance, each with its
// entries (pointers into `data`, which must outlive the result).
std::vector<ConfigGroup> GroupByConfig(const ReportData& data);

// Whether `group` has an entry of each kind (a config key may have both
// scenarios; each gets its own charts).
bool HasFixedSeqLen(const ConfigGroup& group);
bool HasAgentic(const ConfigGroup& group);

XyChart ThroughputChart(const ConfigGroup& group);
XyChart TtftChart(const ConfigGroup& group);
std::optional<XyChart> EnergyChart(const ConfigGroup& group);
std::optional<BarChart> DepSessionsChart(const ConfigGroup& group);

// Whether `e` is drawn in the energy chart (has_result, power_valid and a
// joules_per_output_token).
bool HasEnergy(const ReportEntry& e);

}  // namespace ix
