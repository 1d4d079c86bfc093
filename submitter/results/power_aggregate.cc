#include "submitter/results/power_aggregate.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <map>
#include <regex>

#include "core/base/text.h"
#include "submitter/results/python_json.h"

namespace ix {
namespace {

const std::regex kNumber(R"(-?\d+(?:\.\d+)?)");

void AddReason(std::vector<std::string>& reasons, const std::string& r) {
  if (std::find(reasons.begin(), reasons.end(), r) == reasons.end()) reasons.push_back(r);
}

// One CSV record as Python's csv module with skipinitialspace reads it
// (double quotes allowed; a quoted field keeps its commas).
std::vector<std::string> CsvFields(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false, at_start = true;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') cur += '"', ++i;
      else if (c == '"') quoted = false;
      else cur += c;
    } else if (c == ',') {
      out.push_back(cur), cur.clear(), at_start = true;
      continue;
    } else if (at_start && c == ' ') {
      continue;
    } else if (at_start && c == '"') {
      quoted = true;
    } else {
      cur += c;
    }
    at_start = false;
  }
  out.push_back(cur);
  return out;
}

std::string Strip(const std::string& s) { return std::string(Trim(s)); }

std::optional<double> ParsePower(const std::string& raw) {
  const std::string v = Strip(raw);
  std::string lower = v;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (v.empty() || lower == "[n/a]" || lower == "n/a" || lower == "na") return std::nullopt;
  std::smatch m;
  if (!std::regex_search(v, m, kNumber)) return std::nullopt;
  return std::strtod(m.str(0).c_str(), nullptr);
}

bool Contains(const std::string& s, const char* what) {
  std::string lower = s;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower.find(what) != std::string::npos;
}

// _detect_columns: indices of the timestamp, power and GPU index columns.
struct Columns {
  int time = -1, power = -1, gpu = -1;
};
Columns DetectColumns(const std::vector<std::string>& header) {
  Columns c;
  static const std::regex kGpu("^(index|gpu|gpu_id|gpu_index|card|device)$", std::regex::icase);
  for (size_t i = 0; i < header.size(); ++i) {
    const std::string& h = header[i];
    const int n = static_cast<int>(i);
    if (c.time < 0 && Contains(h, "time")) c.time = n;
    if (c.power < 0 && Contains(h, "power") && !Contains(h, "limit") && !Contains(h, "cap") && !Contains(h, "max") &&
        !Contains(h, "min")) {
      c.power = n;
    }
    if (c.gpu < 0 && std::regex_match(Strip(h), kGpu)) c.gpu = n;
  }
  return c;
}

bool GpuIdLess(const std::string& a, const std::string& b) {
  auto digits = [](const std::string& s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  const bool da = digits(a), db = digits(b);
  if (da != db) return da;
  if (da) return std::strtoull(a.c_str(), nullptr, 10) < std::strtoull(b.c_str(), nullptr, 10);
  return a < b;
}

using Samples = std::vector<std::pair<double, double>>;  // (time, watts), sorted by time

double Interpolate(const Samples& s, double t) {
  const auto right = std::lower_bound(s.begin(), s.end(), t, [](const auto& p, double v) { return p.first < v; });
  if (right != s.end() && std::fabs(right->first - t) <= 1e-9) return right->second;
  const auto& [lt, lp] = *(right - 1);
  const auto& [rt, rp] = *right;
  const double fraction = (t - lt) / (rt - lt);
  return lp + fraction * (rp - lp);
}

double IntegrateDevice(const Samples& s, double start, double end) {
  Samples clipped{{start, Interpolate(s, start)}};
  for (const auto& p : s) {
    if (start < p.first && p.first < end) clipped.push_back(p);
  }
  clipped.emplace_back(end, Interpolate(s, end));
  double energy = 0.0;
  for (size_t i = 1; i < clipped.size(); ++i) {
    energy += (clipped[i].first - clipped[i - 1].first) * (clipped[i - 1].second + clipped[i].second) / 2.0;
  }
  return energy;
}

// statistics.mean of the readings of one GPU at one timestamp.
double Mean(const std::vector<double>& v) {
  long double sum = 0;
  for (double x : v) sum += x;
  return v.size() == 1 ? v[0] : static_cast<double>(sum / static_cast<long double>(v.size()));
}

// The readings of the CSV inside the window (with its margin), per GPU and
// timestamp; reasons for what could not be read.
std::map<std::string, std::map<double, std::vector<double>>> ReadSamples(const std::string& csv, double lo, double hi,
                                                                         std::vector<std::string>& reasons) {
  std::map<std::string, std::map<double, std::vector<double>>> raw;
  const std::vector<std::string_view> lines = Split(csv, '\n');
  size_t i = 0;
  while (i < lines.size() && Trim(lines[i]).empty()) ++i;
  if (i == lines.size()) return raw;
  std::vector<std::string> header = CsvFields(std::string(lines[i++]));
  for (std::string& h : header) h = Strip(h);
  const Columns c = DetectColumns(header);
  if (c.time < 0) AddReason(reasons, "timestamp_column_missing");
  if (c.power < 0) AddReason(reasons, "power_column_missing");
  if (c.gpu < 0) AddReason(reasons, "gpu_identity_column_missing");
  if (c.time < 0 || c.power < 0 || c.gpu < 0) return raw;
  bool missing_identity = false;
  for (; i < lines.size(); ++i) {
    std::string line(lines[i]);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;  // csv.DictReader skips empty rows
    const std::vector<std::string> f = CsvFields(line);
    auto cell = [&](int k) { return static_cast<size_t>(k) < f.size() ? Strip(f[static_cast<size_t>(k)]) : ""; };
    const std::optional<double> t = ParsePowerTimestamp(cell(c.time));
    if (!t || !std::isfinite(*t)) {
      AddReason(reasons, "invalid_timestamp_sample");
      continue;
    }
    if (*t < lo || *t > hi) continue;
    const std::optional<double> w = ParsePower(cell(c.power));
    const std::string gpu = cell(c.gpu);
    if (!w || !std::isfinite(*w) || *w < 0) {
      AddReason(reasons, "invalid_power_sample");
      continue;
    }
    if (gpu.empty()) {
      missing_identity = true;
      continue;
    }
    raw[gpu][*t].push_back(*w);
  }
  if (missing_identity) AddReason(reasons, "gpu_identity_missing");
  return raw;
}

// One GPU's part of integrate_power: its sample count, then either its
// issue or its largest gap and energy.
void IntegrateGpu(PowerIntegration& r, const std::string& id, const std::map<double, std::vector<double>>& raw,
                  double start, double end, double gap) {
  Samples s;
  for (const auto& [t, values] : raw) s.emplace_back(t, Mean(values));
  r.sample_counts.emplace_back(id, static_cast<int64_t>(s.size()));
  const char* issue = nullptr;
  if (s.size() < 2) {
    issue = "insufficient_power_samples";
  } else if (s.front().first > start || s.back().first < end) {
    issue = "benchmark_window_not_bracketed";
  } else {
    const auto first = std::upper_bound(s.begin(), s.end(), start, [](double v, const auto& p) { return v < p.first; }) - 1;
    const auto last = std::lower_bound(s.begin(), s.end(), end, [](const auto& p, double v) { return p.first < v; });
    double max_gap = 0.0;
    for (auto p = first; p != last; ++p) max_gap = std::max(max_gap, (p + 1)->first - p->first);
    r.max_sample_gaps_s.emplace_back(id, max_gap);
    if (max_gap > gap) issue = "sampling_gap_exceeded";
    r.energies_j.emplace_back(id, IntegrateDevice(s, start, end));
  }
  if (issue == nullptr) return;
  AddReason(r.reasons, issue);
  r.device_issues.push_back({id, {issue}});
}

}  // namespace

std::optional<double> ParsePowerTimestamp(const std::string& raw) {
  const std::string v = Strip(raw);
  if (v.empty()) return std::nullopt;
  if (std::regex_match(v, kNumber)) {
    const double n = std::strtod(v.c_str(), nullptr);
    return n > 1e12 ? n / 1000.0 : n;
  }
  std::tm tm{};
  const char* rest = strptime(v.c_str(), "%Y/%m/%d %H:%M:%S", &tm);
  if (rest == nullptr) return std::nullopt;
  long micros = 0;
  if (*rest == '.') {
    ++rest;
    int digits = 0;
    while (std::isdigit(static_cast<unsigned char>(*rest)) && digits < 6) micros = micros * 10 + (*rest++ - '0'), ++digits;
    if (digits == 0) return std::nullopt;
    for (; digits < 6; ++digits) micros *= 10;
  }
  if (*rest != '\0') return std::nullopt;
  tm.tm_isdst = -1;
  const std::time_t t = std::mktime(&tm);
  if (t == static_cast<std::time_t>(-1)) return std::nullopt;
  return static_cast<double>(t) + static_cast<double>(micros) / 1e6;
}

PowerIntegration IntegratePower(const std::string& csv, double start, double end, int expected_gpus, double gap) {
  PowerIntegration r;
  if (!std::isfinite(start) || !std::isfinite(end) || end <= start) return r.reasons = {"invalid_benchmark_window"}, r;
  if (expected_gpus <= 0) AddReason(r.reasons, "invalid_expected_gpu_count");
  if (csv.empty()) return AddReason(r.reasons, "telemetry_file_empty"), r;
  const auto raw = ReadSamples(csv, start - gap, end + gap, r.reasons);
  if (raw.empty()) {
    if (std::find(r.reasons.begin(), r.reasons.end(), "timestamp_column_missing") == r.reasons.end() &&
        std::find(r.reasons.begin(), r.reasons.end(), "power_column_missing") == r.reasons.end() &&
        std::find(r.reasons.begin(), r.reasons.end(), "gpu_identity_column_missing") == r.reasons.end()) {
      AddReason(r.reasons, "no_usable_power_samples");
    }
    return r;
  }
  for (const auto& [id, _] : raw) r.gpu_ids.push_back(id);
  std::sort(r.gpu_ids.begin(), r.gpu_ids.end(), GpuIdLess);
  if (expected_gpus > 0 && static_cast<int>(r.gpu_ids.size()) != expected_gpus) {
    AddReason(r.reasons, "expected_gpu_count_mismatch");
  }
  for (const std::string& id : r.gpu_ids) IntegrateGpu(r, id, raw.at(id), start, end, gap);
  if (r.energies_j.size() == r.gpu_ids.size()) {
    double total = 0;  // Python 3.11's sum(): plain left-to-right addition
    for (const auto& [_, e] : r.energies_j) total += e;
    r.total_gpu_energy_j = total;
    r.avg_total_gpu_power_w = total / (end - start);
    r.avg_power_w = *r.avg_total_gpu_power_w / static_cast<double>(r.gpu_ids.size());
  }
  return r;
}

namespace {

bool IsNumber(const rapidjson::Value& v) { return v.IsNumber(); }  // JSON has no bool-as-int
bool IsPositiveInt(const rapidjson::Value& b, const char* key) {
  return b.HasMember(key) && b[key].IsInt64() && b[key].GetInt64() > 0;
}

// _load_benchmark_data: the window and counts, or nullopt (with the
// reason) when there is no usable window.
std::optional<PowerBenchmark> LoadBenchmark(const rapidjson::Value& b, std::vector<std::string>& reasons) {
  const char* keys[] = {"benchmark_start_time_unix", "benchmark_end_time_unix", "duration"};
  for (const char* k : keys) {
    if (!b.IsObject() || !b.HasMember(k) || !IsNumber(b[k])) return reasons.push_back("invalid_benchmark_window"), std::nullopt;
  }
  PowerBenchmark d;
  d.start = b["benchmark_start_time_unix"].GetDouble();
  d.end = b["benchmark_end_time_unix"].GetDouble();
  d.reported_duration = b["duration"].GetDouble();
  if (!std::isfinite(d.start) || !std::isfinite(d.end) || !std::isfinite(d.reported_duration) || d.end <= d.start ||
      d.reported_duration <= 0) {
    return reasons.push_back("invalid_benchmark_window"), std::nullopt;
  }
  const double integration = d.end - d.start;
  if (std::fabs(d.reported_duration - integration) > std::max(0.5, integration * 0.01)) {
    AddReason(reasons, "benchmark_duration_mismatch");
  }
  const std::pair<const char*, const char*> counts[] = {{"completed", "invalid_successful_query_count"},
                                                        {"total_input_tokens", "invalid_input_token_count"},
                                                        {"total_output_tokens", "invalid_output_token_count"}};
  int64_t* out[] = {&d.completed, &d.input_tokens, &d.output_tokens};
  for (size_t i = 0; i < 3; ++i) {
    if (IsPositiveInt(b, counts[i].first)) *out[i] = b[counts[i].first].GetInt64();
    else AddReason(reasons, counts[i].second);
  }
  return d;
}

}  // namespace

std::vector<std::string> AggregatePower(const std::optional<std::string>& csv, const rapidjson::Value& bench,
                                        rapidjson::Document& agg, int expected_gpus) {
  return RunPower(csv, bench, agg, expected_gpus).reasons;
}

PowerRun RunPower(const std::optional<std::string>& csv, const rapidjson::Value& bench, rapidjson::Document& agg,
                  int expected_gpus) {
  PowerRun run;
  run.benchmark = LoadBenchmark(bench, run.reasons);
  PowerIntegration& in = run.integration;
  if (!run.benchmark) in.reasons = run.reasons;
  else if (!csv) in.reasons = {"telemetry_file_missing"};
  else in = IntegratePower(*csv, run.benchmark->start, run.benchmark->end, expected_gpus);
  for (const std::string& r : in.reasons) AddReason(run.reasons, r);
  if (run.valid()) {
    const PowerBenchmark& b = *run.benchmark;
    const double energy = *in.total_gpu_energy_j;
    run.metrics = {
        {"avg_power_w", *in.avg_power_w},
        {"avg_total_gpu_power_w", *in.avg_total_gpu_power_w},
        {"total_gpu_energy_j", energy},
        {"joules_per_successful_query", energy / static_cast<double>(b.completed)},
        {"joules_per_input_token", energy / static_cast<double>(b.input_tokens)},
        {"joules_per_output_token", energy / static_cast<double>(b.output_tokens)},
        {"joules_per_total_token", energy / static_cast<double>(b.input_tokens + b.output_tokens)},
    };
  }
  PatchPowerResult(agg, run.valid(), run.metrics);
  return run;
}

void PatchPowerResult(rapidjson::Document& agg, bool valid, const std::vector<std::pair<std::string, double>>& metrics) {
  const char* power_keys[] = {"avg_power_w", "avg_total_gpu_power_w", "total_gpu_energy_j",
                              "joules_per_successful_query", "joules_per_input_token", "joules_per_output_token",
                              "joules_per_total_token", "power_metric_schema_version", "power_valid",
                              "power_invalid_reasons"};
  for (const char* k : power_keys) agg.EraseMember(k);  // EraseMember keeps the order of the rest
  auto& a = agg.GetAllocator();
  agg.AddMember("power_metric_schema_version", 2, a);
  agg.AddMember("power_valid", valid ? 1 : 0, a);
  if (!valid) return;
  for (const auto& [k, value] : metrics) {
    const bool coarse = k.size() > 2 && (k.compare(k.size() - 2, 2, "_w") == 0 || k.compare(k.size() - 2, 2, "_j") == 0);
    agg.AddMember(rapidjson::Value(k.c_str(), a), rapidjson::Value(PyRound(value, coarse ? 3 : 6)), a);
  }
}

namespace {

using Alloc = rapidjson::Document::AllocatorType;

template <class T>
rapidjson::Value ById(const std::vector<std::pair<std::string, T>>& v, Alloc& a) {
  rapidjson::Value o(rapidjson::kObjectType);
  for (const auto& [id, x] : v) o.AddMember(rapidjson::Value(id.c_str(), a), rapidjson::Value(x), a);
  return o;
}

rapidjson::Value Strings(const std::vector<std::string>& v, Alloc& a) {
  rapidjson::Value o(rapidjson::kArrayType);
  for (const std::string& s : v) o.PushBack(rapidjson::Value(s.c_str(), a), a);
  return o;
}

rapidjson::Value Window(const std::optional<PowerBenchmark>& b, Alloc& a) {
  if (!b) return rapidjson::Value();
  rapidjson::Value w(rapidjson::kObjectType);
  w.AddMember("start_time_unix", b->start, a);
  w.AddMember("end_time_unix", b->end, a);
  w.AddMember("reported_duration_s", b->reported_duration, a);
  w.AddMember("integration_duration_s", b->end - b->start, a);
  w.AddMember("completed", b->completed, a);
  w.AddMember("total_input_tokens", b->input_tokens, a);
  w.AddMember("total_output_tokens", b->output_tokens, a);
  return w;
}

}  // namespace

rapidjson::Document PowerValidationPayload(const PowerRun& run, int expected_gpus, const std::string& csv_path,
                                           const std::string& bench_path) {
  rapidjson::Document d(rapidjson::kObjectType);
  auto& a = d.GetAllocator();
  const PowerIntegration& in = run.integration;
  d.AddMember("schema_version", 1, a);
  d.AddMember("power_valid", run.valid(), a);
  d.AddMember("reasons", Strings(run.reasons, a), a);
  d.AddMember("telemetry_source", rapidjson::Value(csv_path.c_str(), a), a);
  d.AddMember("benchmark_result", rapidjson::Value(bench_path.c_str(), a), a);
  d.AddMember("benchmark_window", Window(run.benchmark, a), a);
  d.AddMember("integration_method", "per_device_trapezoidal_with_linear_boundary_interpolation", a);
  d.AddMember("expected_gpu_count", expected_gpus, a);
  d.AddMember("observed_gpu_count", static_cast<int64_t>(in.gpu_ids.size()), a);
  d.AddMember("observed_gpu_ids", Strings(in.gpu_ids, a), a);
  d.AddMember("per_gpu_sample_counts", ById(in.sample_counts, a), a);
  d.AddMember("per_gpu_max_sample_gap_s", ById(in.max_sample_gaps_s, a), a);
  d.AddMember("per_gpu_energy_j", ById(in.energies_j, a), a);
  rapidjson::Value issues(rapidjson::kObjectType);
  for (const auto& [id, list] : in.device_issues) issues.AddMember(rapidjson::Value(id.c_str(), a), Strings(list, a), a);
  d.AddMember("device_issues", issues, a);
  d.AddMember("accumulator_check", rapidjson::Value(), a);
  rapidjson::Value metrics(rapidjson::kObjectType);
  for (const auto& [k, v] : run.metrics) {
    if (std::isfinite(v)) metrics.AddMember(rapidjson::Value(k.c_str(), a), rapidjson::Value(PyRound(v, 6)), a);
  }
  d.AddMember("metrics", metrics, a);
  return d;
}

std::vector<std::string> MarkMultinodePowerMissing(rapidjson::Document& agg) {
  // aggregate_power_multinode.py's WHOLE_METRIC_KEYS + ROLE_METRIC_KEYS.
  const char* metrics[] = {"avg_power_w", "avg_total_gpu_power_w", "total_gpu_energy_j",
                           "joules_per_successful_query", "joules_per_input_token", "joules_per_output_token",
                           "joules_per_total_token", "prefill_gpu_energy_j", "decode_gpu_energy_j",
                           "prefill_avg_power_w", "decode_avg_power_w", "prefill_joules_per_input_token",
                           "decode_joules_per_output_token"};
  for (const char* k : metrics) agg.EraseMember(k);
  auto& a = agg.GetAllocator();
  auto assign = [&](const char* key, int value) {
    if (agg.HasMember(key)) agg[key].SetInt(value);
    else agg.AddMember(rapidjson::Value(key, a), rapidjson::Value(value), a);
  };
  assign("power_metric_schema_version", 2);
  assign("power_valid", 0);
  agg.EraseMember("power_invalid_reasons");
  return {"power_artifacts_missing"};
}

}  // namespace ix
