#include "spank_plugin/step_hang.h"

#include <cmath>
#include <cstdio>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "core/process/engine_metrics.h"

namespace ix {
namespace {

std::string Number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, v == std::floor(v) && std::fabs(v) < 1e15 ? "%.0f" : "%.3f", v);
  return buf;
}

// The sum of several gauges' samples: unset when none of them has one.
std::optional<double> SumOf(std::string_view text, const std::vector<std::string>& metrics) {
  std::optional<double> sum;
  for (const std::string& m : metrics) {
    if (std::optional<double> v = SumPrometheusSamples(text, m)) sum = sum.value_or(0) + *v;
  }
  return sum;
}

// Adds `v` to the engines' total of `name`; one engine without a reading
// makes the total unknown for this poll.
void AddTotal(std::map<std::string, std::optional<double>>& totals, const std::string& name, std::optional<double> v) {
  auto [it, fresh] = totals.try_emplace(name, v);
  if (fresh) return;
  it->second = it->second && v ? std::optional<double>(*it->second + *v) : std::nullopt;
}

}  // namespace

std::string HangFinding::Describe() const {
  std::string who = process + (label.empty() ? "" : " (" + label + "=" + label_value + ")");
  if (!answered) return who + ": no answer for " + Number(stalled_s) + " s while its process lives";
  std::string text = who + ": " + (busy ? Number(*busy) : "?") + " busy and no progress for " + Number(stalled_s) + " s";
  std::string list;
  for (const auto& [name, value] : counters) list += (list.empty() ? "" : ", ") + name + " " + (value ? Number(*value) : "unread");
  return list.empty() ? text : text + " (" + list + ")";
}

std::string HangFinding::Json() const {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  // Numbers as Describe writes them (whole counters without ".0").
  const auto number = [&](std::optional<double> v) {
    if (!v) return (void)w.Null();
    const std::string text = Number(*v);
    w.RawValue(text.c_str(), text.size(), rapidjson::kNumberType);  // 1.1.0's RawNumber writes a string
  };
  w.StartObject();
  w.Key("process"); w.String(process.c_str());
  w.Key("label"); w.String(label.c_str());
  w.Key("label_value"); w.String(label_value.c_str());
  w.Key("stalled_s"); number(stalled_s);
  w.Key("answered"); w.Bool(answered);
  w.Key("busy"); number(busy);
  w.Key("counters");
  w.StartObject();
  for (const auto& [name, value] : counters) {
    w.Key(name.c_str());
    number(value);
  }
  w.EndObject();
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize());
}

std::optional<HangFinding> StepHang::Poll(double now, const Fetch& fetch) {
  if (reported_) return std::nullopt;
  Totals totals;
  // Engines first: the router's progress is theirs, summed.
  for (const bool engines : {true, false}) {
    for (const HangCheck& check : policy_.checks) {
      if (check.progress.empty() == engines) continue;
      if (std::optional<HangFinding> f = PollCheck(now, check, fetch(check.metrics_url), totals)) {
        reported_ = true;
        return f;
      }
    }
  }
  return std::nullopt;
}

std::optional<HangFinding> StepHang::PollCheck(double now, const HangCheck& check,
                                               const std::optional<std::string>& body, Totals& totals) {
  std::vector<std::string> names = check.progress;
  if (names.empty()) {
    for (const auto& [name, v] : totals) names.push_back(name);
  }
  const auto series = [&](const std::string& value) -> Series& {
    return series_.try_emplace({check.process, value}, Series{HangWatch(policy_.after_s), std::nullopt}).first->second;
  };
  if (!body) {
    // A wedged event loop answers nothing: every series of the server
    // counts it (the summed one when none was seen yet).
    if (!check.progress.empty()) {
      for (const std::string& n : names) AddTotal(totals, n, std::nullopt);
    }
    std::vector<std::string> values;
    for (const auto& [key, s] : series_) {
      if (key.first == check.process) values.push_back(key.second);
    }
    if (values.empty()) values.push_back("");
    for (const std::string& v : values) {
      Series& s = series(v);
      if (s.watch.ObserveNoAnswer(now)) return Judge(now, check, v, s, false, names);
    }
    return std::nullopt;
  }
  for (const std::string& n : check.progress) AddTotal(totals, n, SumPrometheusSamples(*body, n));
  if (check.per_label.empty()) {
    std::vector<std::optional<double>> counters;
    for (const std::string& n : names) counters.push_back(check.progress.empty() ? totals[n] : SumPrometheusSamples(*body, n));
    Series& s = series("");
    s.busy = SumOf(*body, check.busy);
    return s.watch.ObserveCounters(now, s.busy, counters) ? Judge(now, check, "", s, true, names) : std::nullopt;
  }
  std::map<std::string, double> busy;
  for (const std::string& m : check.busy) {
    for (const auto& [v, x] : SumPrometheusSamplesBy(*body, m, check.per_label)) busy[v] += x;
  }
  std::vector<std::map<std::string, double>> progress;
  for (const std::string& n : names) progress.push_back(SumPrometheusSamplesBy(*body, n, check.per_label));
  for (const auto& [value, b] : busy) {
    std::vector<std::optional<double>> counters;
    for (const auto& p : progress) {
      auto it = p.find(value);
      counters.push_back(it == p.end() ? std::nullopt : std::optional<double>(it->second));
    }
    Series& s = series(value);
    s.busy = b;
    if (s.watch.ObserveCounters(now, b, counters)) return Judge(now, check, value, s, true, names);
  }
  return std::nullopt;
}

std::optional<HangFinding> StepHang::Judge(double now, const HangCheck& check, const std::string& value, Series& s,
                                           bool answered, const std::vector<std::string>& names) {
  HangFinding f;
  f.process = check.process;
  if (!value.empty() || !check.per_label.empty()) {
    f.label = check.per_label;
    f.label_value = value;
  }
  f.stalled_s = s.watch.stalled_for(now);
  f.answered = answered;
  f.busy = s.busy;
  const auto& last = s.watch.last_counters();
  for (size_t i = 0; i < names.size(); ++i) f.counters.emplace_back(names[i], i < last.size() ? last[i] : std::nullopt);
  return f;
}

}  // namespace ix
