#include "submitter/report/agentic_charts.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "submitter/report/report_text.h"

namespace ix {
namespace {

bool Agentic(const ReportEntry& e) { return IsAgentic(e) && e.has_result; }

// An entry's value per DP rank (index = rank; NaN where a rank has none).
std::vector<double> PerRank(const ReportEntry& e, const std::function<std::optional<double>(const DpRankStats&)>& get) {
  std::vector<double> v;
  for (const DpRankStats& r : e.agentic.dp_ranks) {
    if (static_cast<size_t>(r.rank) >= v.size()) v.resize(static_cast<size_t>(r.rank) + 1, std::nan(""));
    if (const std::optional<double> x = get(r)) v[static_cast<size_t>(r.rank)] = *x;
  }
  return v;
}

std::optional<double> Sessions(const DpRankStats& r) {
  return r.sessions ? std::optional<double>(static_cast<double>(*r.sessions)) : std::nullopt;
}

std::optional<double> HitPercent(const DpRankStats& r) {
  return r.prefix_cache_hit_rate ? std::optional<double>(*r.prefix_cache_hit_rate * 100.0) : std::nullopt;
}

// Whether `e` spreads over DP ranks (two or more: one rank has no spread to
// show) and one of them has a value.
bool AnyRank(const ReportEntry& e, const std::function<std::optional<double>(const DpRankStats&)>& get) {
  return e.agentic.dp_ranks.size() >= 2 && std::any_of(e.agentic.dp_ranks.begin(), e.agentic.dp_ranks.end(),
                     [&](const DpRankStats& r) { return get(r).has_value(); });
}

// The series of one cache tier of an arm: a point per entry with a rate.
ChartSeries TierSeries(const ArmEntries& arm, const char* tier, const SeriesStyle& style,
                       std::optional<double> AgenticResult::*rate) {
  ChartSeries s{arm.arm + " " + tier, style, {}};
  for (const ReportEntry* e : arm.entries) {
    const std::optional<double>& r = e->agentic.*rate;
    if (!r) continue;
    s.points.push_back({static_cast<double>(e->conc), *r * 100.0,
                        Who(*e) + kDot + tier + " prefix-cache hit " + FormatPercent(*r) + EntryTag(*e), ""});
  }
  return s;
}

XyChart KvUsageChart(const ArmEntries& arm) {
  XyChart chart = NamedChart<XyChart>("agentic-kv-usage",
                                      "KV cache usage over time" + std::string(kDot) + arm.arm,
                                      "time since the run's first metrics slice (s)",
                                      "GPU KV cache usage (%, busiest engine)");
  for (size_t i = 0; i < arm.entries.size(); ++i) {
    const ReportEntry& e = *arm.entries[i];
    ChartSeries s{"conc " + std::to_string(e.conc), DefaultStyle(i), {}};
    const std::string engines = " (busiest of " + std::to_string(e.agentic.kv_engines) + " engines)";
    for (const KvUsagePoint& p : e.agentic.kv_usage) {
      s.points.push_back({p.t_s, p.pct,
                          Who(e) + kDot + FormatFixed(p.t_s, 0) + "\xe2\x80\x93" + FormatFixed(p.end_s, 0) + " s" +
                              kDot + FormatFixed(p.pct, 1) + "%" + engines + EntryTag(e),
                          ""});
    }
    chart.series.push_back(std::move(s));
  }
  return chart;
}

}  // namespace

std::string FormatPercent(double rate) { return FormatFixed(rate * 100.0, 1) + "%"; }

XyChart AgenticThroughputChart(const ConfigGroup& group) {
  return ThroughputInteractivity(ByArm(group, Agentic), "agentic-throughput-interactivity",
                                 "Agentic coding: throughput per GPU vs interactivity");
}

XyChart TurnTtftChart(const ConfigGroup& group) {
  XyChart chart = NamedChart<XyChart>("agentic-ttft-turn",
                                      "Agentic coding: p50 TTFT by turn (arms at their highest conc)",
                                      "turn position in the session (turn_index)",
                                      "p50 time to first token (s)");
  const auto arms = ByArm(group, [](const ReportEntry& e) { return Agentic(e) && !e.agentic.ttft_by_turn.empty(); });
  for (size_t i = 0; i < arms.size(); ++i) {
    const ReportEntry& e = *arms[i].entries.back();  // the highest conc: where turns compete the most
    ChartSeries s{Who(e), DefaultStyle(i), {}};
    for (const TurnTtft& t : e.agentic.ttft_by_turn) {
      s.points.push_back({static_cast<double>(t.turn), t.p50_s,
                          Who(e) + kDot + "turn " + std::to_string(t.turn) + kDot + "p50 TTFT " +
                              FormatSeconds(t.p50_s) + " s" + kDot + "mean " + FormatSeconds(t.mean_s) + " s" + kDot +
                              std::to_string(t.requests) + " requests" + EntryTag(e),
                          ""});
    }
    chart.series.push_back(std::move(s));
  }
  return chart;
}

std::optional<XyChart> CacheHitChart(const ConfigGroup& group) {
  const auto arms = ByArm(group, [](const ReportEntry& e) {
    return Agentic(e) && (e.agentic.gpu_cache_hit_rate || e.agentic.cpu_cache_hit_rate);
  });
  if (arms.empty()) return std::nullopt;
  XyChart chart = NamedChart<XyChart>("agentic-cache-hit", "Agentic coding: prefix-cache hit rate vs concurrency",
                                      "concurrency (sessions in flight, log2 scale)", "prefix-cache hit rate (%)");
  chart.log2_x = true;
  for (size_t i = 0; i < arms.size(); ++i) {
    const auto [gpu_style, cpu_style] = PairedStyles(i);
    for (ChartSeries s : {TierSeries(arms[i], "GPU", gpu_style, &AgenticResult::gpu_cache_hit_rate),
                          TierSeries(arms[i], "CPU", cpu_style, &AgenticResult::cpu_cache_hit_rate)}) {
      if (!s.points.empty()) chart.series.push_back(std::move(s));
    }
  }
  return chart;
}

std::vector<XyChart> KvUsageCharts(const ConfigGroup& group) {
  std::vector<XyChart> charts;
  const auto arms = ByArm(group, [](const ReportEntry& e) { return Agentic(e) && !e.agentic.kv_usage.empty(); });
  for (const ArmEntries& arm : arms) charts.push_back(KvUsageChart(arm));
  return charts;
}

std::optional<BarChart> DpSessionsChart(const ConfigGroup& group) {
  return RankBarChart(ByArm(group, [](const ReportEntry& e) { return Agentic(e) && AnyRank(e, Sessions); }),
                      {"agentic-dp-sessions", "Agentic coding: sessions per data-parallel rank",
                       "sessions served (count)", [](const ReportEntry& e) { return PerRank(e, Sessions); },
                       [](double v) { return FormatFixed(v, 0) + " sessions"; }});
}

std::optional<BarChart> DpHitRateChart(const ConfigGroup& group) {
  return RankBarChart(ByArm(group, [](const ReportEntry& e) { return Agentic(e) && AnyRank(e, HitPercent); }),
                      {"agentic-dp-hit-rate", "Agentic coding: prefix-cache hit rate per data-parallel rank",
                       "prefix-cache hit rate (%)", [](const ReportEntry& e) { return PerRank(e, HitPercent); },
                       [](double v) { return FormatFixed(v, 1) + "% prefix-cache hits"; }});
}

}  // namespace ix
