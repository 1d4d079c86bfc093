#include "submitter/results/agentic_request_metrics.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

namespace ix {
namespace {

using Alloc = rapidjson::Document::AllocatorType;
using rapidjson::Value;

// An exact sum of doubles (Shewchuk's non-overlapping partials, as
// math.fsum keeps them), so means and variances are rounded once, as
// Python's Fraction-based statistics module rounds them.
class ExactSum {
 public:
  void Add(double x) {
    size_t i = 0;
    for (double y : partials_) {
      if (std::fabs(x) < std::fabs(y)) std::swap(x, y);
      const double hi = x + y;
      const double lo = y - (hi - x);
      if (lo != 0.0) partials_[i++] = lo;
      x = hi;
    }
    partials_.resize(i);
    partials_.push_back(x);
  }
  // The sum rounded to nearest (math.fsum's final step).
  double Value() const {
    if (partials_.empty()) return 0.0;
    size_t n = partials_.size() - 1;
    double hi = partials_[n], lo = 0.0;
    while (n > 0) {
      const double x = hi, y = partials_[--n];
      hi = x + y;
      lo = y - (hi - x);
      if (lo != 0.0) break;
    }
    if (n > 0 && ((lo < 0 && partials_[n - 1] < 0) || (lo > 0 && partials_[n - 1] > 0))) {
      const double y = lo * 2, x = hi + y;
      if (y == x - hi) hi = x;
    }
    return hi;
  }

 private:
  std::vector<double> partials_;
};

// The exact mean as hi + lo (hi the correctly rounded mean).
std::pair<double, double> MeanParts(const std::vector<double>& v) {
  ExactSum s;
  for (double x : v) s.Add(x);
  const double n = static_cast<double>(v.size());
  const double total = s.Value();
  const double q = total / n;
  s.Add(-total);                             // what rounding the sum lost
  const double rem = std::fma(-q, n, total);  // exact: total - q*n
  const double lo = (rem + s.Value()) / n;
  const double hi = q + lo;
  return {hi, lo - (hi - q)};
}

// stats_for's keys in its order, {mean, p50, p75, p90, p95, std}, of
// non-empty `v`, its mean given (a float, or an int that stays one).
Value StatsWithMean(const std::vector<double>& v, Value mean, Alloc& a) {
  Value out(rapidjson::kObjectType);
  out.AddMember("mean", mean, a);
  out.AddMember("p50", PyPercentile(v, 50), a);
  out.AddMember("p75", PyPercentile(v, 75), a);
  out.AddMember("p90", PyPercentile(v, 90), a);
  out.AddMember("p95", PyPercentile(v, 95), a);
  out.AddMember("std", v.size() > 1 ? PyPStdev(v) : 0.0, a);
  return out;
}

// stats_for: {mean, p50, p75, p90, p95, std}, or {} for no values.
Value StatsFor(const std::vector<double>& v, Alloc& a) {
  if (v.empty()) return Value(rapidjson::kObjectType);
  return StatsWithMean(v, Value(PyMean(v)), a);
}

// _distribution: stats_for over ints (the mean may stay an int).
Value Distribution(const std::vector<int64_t>& v, Alloc& a) {
  if (v.empty()) return Value(rapidjson::kObjectType);
  std::vector<double> f(v.begin(), v.end());
  for (size_t i = 0; i < v.size(); ++i) f[i] = static_cast<double>(v[i]);
  return StatsWithMean(f, PyMeanOfInts(v), a);
}

// _interactivity_stats: 1/x of each latency statistic (so p90
// interactivity is 1/p90 latency) and the pstdev of per-request 1/x.
Value Interactivity(const Value& latency_stats, const std::vector<double>& values, Alloc& a) {
  Value out(rapidjson::kObjectType);
  for (const char* k : {"mean", "p50", "p75", "p90", "p95"}) {
    auto it = latency_stats.FindMember(k);
    if (it != latency_stats.MemberEnd() && it->value.GetDouble() > 0) {
      out.AddMember(Value(k, a), Value(1.0 / it->value.GetDouble()), a);
    }
  }
  std::vector<double> per_request;
  for (double x : values) {
    if (x > 0) per_request.push_back(1.0 / x);
  }
  if (!per_request.empty()) out.AddMember("std", per_request.size() > 1 ? PyPStdev(per_request) : 0.0, a);
  return out;
}

std::vector<double> Floats(const AgenticRecords& r, const char* key) {
  std::vector<double> out;
  for (const Value& rec : r.kept.GetArray()) {
    if (auto f = PyToFloat(RecordMetric(rec, key))) out.push_back(*f);
  }
  return out;
}

std::vector<int64_t> Ints(const AgenticRecords& r, const char* key) {
  std::vector<int64_t> out;
  for (const Value& rec : r.kept.GetArray()) {
    if (auto i = PyToInt(RecordMetric(rec, key))) out.push_back(*i);
  }
  return out;
}

// _ms_to_s: finite positive milliseconds as seconds.
std::vector<double> Seconds(const std::vector<double>& ms) {
  std::vector<double> out;
  for (double x : ms) {
    if (std::isfinite(x) && x > 0) out.push_back(x / 1000.0);
  }
  return out;
}

// int(metadata[key]) of the records where it is truthy.
std::vector<int64_t> Timestamps(const AgenticRecords& r, const char* key) {
  std::vector<int64_t> out;
  for (const Value& rec : r.kept.GetArray()) {
    const Value* v = RecordMetadata(rec, key);
    if (v == nullptr || !PyTruthy(*v)) continue;
    if (auto i = PyToInt(v)) out.push_back(*i);
  }
  return out;
}

Value Qps(const AgenticRecords& r, Alloc& a) {
  Value out(rapidjson::kObjectType);
  std::vector<double> ends;
  for (int64_t ns : Timestamps(r, "request_end_ns")) ends.push_back(static_cast<double>(ns) / 1e9);
  if (ends.size() < 2) return out;
  std::sort(ends.begin(), ends.end());
  const double duration = ends.back() - ends.front();
  if (duration <= 0) return out;
  const double window = 1.0;
  std::vector<double> qps;
  for (double current = ends.front(); current + window <= ends.back(); current += window) {
    const auto n = std::count_if(ends.begin(), ends.end(), [&](double e) { return current <= e && e < current + window; });
    qps.push_back(static_cast<double>(n) / window);
  }
  out.AddMember("window_seconds", window, a);
  out.AddMember("samples", static_cast<int64_t>(qps.size()), a);
  if (qps.empty()) {
    out.AddMember("mean", static_cast<double>(ends.size()) / duration, a);
    return out;
  }
  Value stats = StatsFor(qps, a);
  // Moved by position: a non-const member loop's != is ambiguous under clang's C++20 rules.
  for (rapidjson::SizeType i = 0; i < stats.MemberCount(); ++i) {
    auto& m = *(stats.MemberBegin() + i);
    out.AddMember(m.name, m.value, a);
  }
  return out;
}

Value Latency(const AgenticRecords& r, Alloc& a) {
  const std::vector<double> ttft = Seconds(Floats(r, "time_to_first_token"));
  const std::vector<double> e2el = Seconds(Floats(r, "request_latency"));
  const std::vector<double> itl = Seconds(Floats(r, "inter_token_latency"));
  const std::vector<double> full = Seconds(Floats(r, "full_response_inter_token_latency"));
  std::vector<double> per_token;  // E2EL / OSL of each request, seconds
  for (const Value& rec : r.kept.GetArray()) {
    const auto ms = PyToFloat(RecordMetric(rec, "request_latency"));
    const auto osl = PyToFloat(RecordMetric(rec, "output_sequence_length"));
    if (!ms || !osl || !std::isfinite(*ms) || !std::isfinite(*osl) || *ms <= 0 || *osl <= 0) continue;
    per_token.push_back(*ms / 1000.0 / *osl);
  }
  Value out(rapidjson::kObjectType);
  Value itl_stats = StatsFor(itl, a), full_stats = StatsFor(full, a);
  out.AddMember("ttft", StatsFor(ttft, a), a);
  out.AddMember("e2el", StatsFor(e2el, a), a);
  out.AddMember("intvty", Interactivity(itl_stats, itl, a), a);  // reordered below
  out.AddMember("e2e_norm_intvty", Interactivity(StatsFor(per_token, a), per_token, a), a);
  out.AddMember("full_response_intvty", Interactivity(full_stats, full, a), a);
  Value ordered(rapidjson::kObjectType);
  ordered.AddMember("ttft", out["ttft"], a);
  ordered.AddMember("e2el", out["e2el"], a);
  ordered.AddMember("itl", Value(itl_stats, a), a);
  ordered.AddMember("tpot", itl_stats, a);
  ordered.AddMember("intvty", out["intvty"], a);
  ordered.AddMember("e2e_norm_intvty", out["e2e_norm_intvty"], a);
  ordered.AddMember("full_response_itl", full_stats, a);
  ordered.AddMember("full_response_intvty", out["full_response_intvty"], a);
  return ordered;
}

Value Tokens(const AgenticRecords& r, Alloc& a) {
  Value out(rapidjson::kObjectType);
  out.AddMember("input", Distribution(Ints(r, "input_sequence_length"), a), a);
  out.AddMember("output_actual", Distribution(Ints(r, "output_sequence_length"), a), a);
  // The expected output lengths come from the AgentX traces in the local
  // Hugging Face cache (trace_metadata.py); a sweep step has none.
  out.AddMember("output_expected", Value(rapidjson::kObjectType), a);
  return out;
}

int64_t Sum(const std::vector<int64_t>& v) {
  int64_t s = 0;
  for (int64_t x : v) s += x;
  return s;
}

Value Throughput(const AgenticRecords& r, int64_t num_gpus, Alloc& a) {
  Value out(rapidjson::kObjectType);
  const std::vector<int64_t> starts = Timestamps(r, "request_start_ns"), ends = Timestamps(r, "request_end_ns");
  if (starts.empty() || ends.empty()) return out;
  const double duration =
      static_cast<double>(*std::max_element(ends.begin(), ends.end()) - *std::min_element(starts.begin(), starts.end())) / 1e9;
  if (duration <= 0) return out;
  const int64_t in = Sum(Ints(r, "input_sequence_length")), outp = Sum(Ints(r, "output_sequence_length"));
  const double in_tps = static_cast<double>(in) / duration, out_tps = static_cast<double>(outp) / duration;
  const double total_tps = static_cast<double>(in + outp) / duration;
  auto rate = [&](double v) {
    Value o(rapidjson::kObjectType);
    o.AddMember("tokens_per_second", v, a);
    return o;
  };
  out.AddMember("input", rate(in_tps), a);
  out.AddMember("output", rate(out_tps), a);
  out.AddMember("total", rate(total_tps), a);
  out.AddMember("duration_seconds", duration, a);
  Value per_gpu(rapidjson::kObjectType);
  if (num_gpus > 0) {
    const double n = static_cast<double>(num_gpus);
    per_gpu.AddMember("total_tput_tps", total_tps / n, a);
    per_gpu.AddMember("output_tput_tps", out_tps / n, a);
    per_gpu.AddMember("input_tput_tps", in_tps / n, a);
  }
  out.AddMember("per_gpu", per_gpu, a);
  return out;
}

// _aiperf_percent_metric_as_rate(aggregate, "theoretical_prefix_cache_hit").
std::optional<double> TheoreticalHitRate(const Value& aggregate) {
  if (!aggregate.IsObject()) return std::nullopt;
  const auto it = aggregate.FindMember("theoretical_prefix_cache_hit");
  if (it == aggregate.MemberEnd() || !it->value.IsObject()) return std::nullopt;
  const Value& m = it->value;
  auto field = [&](const char* k) { auto f = m.FindMember(k); return f == m.MemberEnd() ? nullptr : &f->value; };
  const auto hits = PyToFloat(field("sum")), blocks = PyToFloat(field("count"));
  if (hits && blocks && *blocks > 0) return *hits / *blocks;
  const auto avg = PyToFloat(field("avg"));
  if (!avg) return std::nullopt;
  const Value* unit = field("unit");
  const bool percent = unit != nullptr && unit->IsString() && std::string(unit->GetString()) == "%";
  return percent ? *avg / 100.0 : *avg;
}

}  // namespace

double PyPercentile(std::vector<double> data, double p) {
  if (data.empty()) return 0.0;
  std::sort(data.begin(), data.end());
  const double k = static_cast<double>(data.size() - 1) * (p / 100);
  const size_t f = static_cast<size_t>(k);
  const size_t c = f + 1;
  if (c >= data.size()) return data[f];
  return data[f] + (k - static_cast<double>(f)) * (data[c] - data[f]);
}

double PyMean(const std::vector<double>& v) { return MeanParts(v).first; }

double PyPStdev(const std::vector<double>& v) {
  const auto [mean_hi, mean_lo] = MeanParts(v);
  ExactSum ss;
  for (double x : v) {
    const double s = x - mean_hi;               // x - mean as s + t, nearly exactly
    const double t = (x - (s + mean_hi)) - mean_lo;
    const double sq = s * s;
    ss.Add(sq);
    ss.Add(std::fma(s, s, -sq));  // what s*s lost
    ss.Add(2 * s * t);
  }
  return std::sqrt(ss.Value() / static_cast<double>(v.size()));
}

Value PyMeanOfInts(const std::vector<int64_t>& v) {
  const int64_t sum = Sum(v), n = static_cast<int64_t>(v.size());
  if (sum % n == 0) return Value(sum / n);
  return Value(static_cast<double>(sum) / static_cast<double>(n));
}

Value AgenticRequestMetrics(const AgenticRecords& r, const Value& aggregate, int64_t num_gpus, Alloc& a) {
  Value out(rapidjson::kObjectType);
  out.AddMember("qps", Qps(r, a), a);
  out.AddMember("latency", Latency(r, a), a);
  out.AddMember("tokens", Tokens(r, a), a);
  out.AddMember("throughput", Throughput(r, num_gpus, a), a);
  Value cache(rapidjson::kObjectType);
  const std::optional<double> hit = TheoreticalHitRate(aggregate);
  cache.AddMember("theoretical_cache_hit_rate", hit ? Value(*hit) : Value(), a);
  out.AddMember("cache", cache, a);
  return out;
}

}  // namespace ix
