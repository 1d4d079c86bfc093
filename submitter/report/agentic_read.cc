#include "submitter/report/agentic_read.h"

#include <fcntl.h>
#include <rapidjson/document.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <map>

#include "core/base/file_text.h"

namespace ix {
namespace {

// InferenceX writes NaN/Infinity for non-finite floats (round_floats keeps
// them), so the reader must accept them; they then read as "no value".
constexpr unsigned kParseFlags = rapidjson::kParseFullPrecisionFlag | rapidjson::kParseNanAndInfFlag;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr size_t kMaxDpRanks = 1024;
constexpr size_t kMaxSearchedChildren = 4096;

const rapidjson::Value* At(const rapidjson::Value& v, std::initializer_list<const char*> keys) {
  const rapidjson::Value* at = &v;
  for (const char* k : keys) {
    if (!at->IsObject()) return nullptr;
    const auto it = at->FindMember(k);
    if (it == at->MemberEnd()) return nullptr;
    at = &it->value;
  }
  return at;
}

std::optional<double> Finite(const rapidjson::Value* v) {
  if (v == nullptr || !v->IsNumber() || !std::isfinite(v->GetDouble())) return std::nullopt;
  return v->GetDouble();
}

std::optional<double> NumAt(const rapidjson::Value& v, std::initializer_list<const char*> keys) {
  return Finite(At(v, keys));
}

// An integer, also when written as a whole float ("5.0").
std::optional<int64_t> IntOf(const rapidjson::Value* v) {
  if (v != nullptr && v->IsInt64()) return v->GetInt64();
  const std::optional<double> d = Finite(v);
  if (!d || *d != std::floor(*d) || std::fabs(*d) > 9e15) return std::nullopt;
  return static_cast<int64_t>(*d);
}

std::string StrAt(const rapidjson::Value& v, std::initializer_list<const char*> keys) {
  const rapidjson::Value* s = At(v, keys);
  return s != nullptr && s->IsString() ? std::string(s->GetString(), s->GetStringLength()) : "";
}

// Python's truthiness, as InferenceX tests a record's "error".
bool Truthy(const rapidjson::Value* v) {
  if (v == nullptr || v->IsNull()) return false;
  if (v->IsBool()) return v->GetBool();
  if (v->IsNumber()) return v->GetDouble() != 0;
  if (v->IsString()) return v->GetStringLength() > 0;
  if (v->IsArray()) return !v->Empty();
  return v->IsObject() && v->MemberCount() > 0;
}

std::string ReadBounded(const std::string& path, size_t max_bytes) {
  int err = 0;
  std::string text = ReadFileTextAt(AT_FDCWD, path, &err, max_bytes);
  return err ? std::string() : text;
}

void Headline(const rapidjson::Value& d, ReportEntry& e) {
  const auto tput = NumAt(d, {"request_metrics", "throughput", "per_gpu", "total_tput_tps"});
  const auto intvty = NumAt(d, {"request_metrics", "latency", "intvty", "p50"});
  e.has_result = tput.has_value() && intvty.has_value();
  e.tput_per_gpu = tput.value_or(0);
  e.output_tput_per_gpu = NumAt(d, {"request_metrics", "throughput", "per_gpu", "output_tput_tps"}).value_or(0);
  e.median_intvty = intvty.value_or(0);
  e.mean_ttft_s = NumAt(d, {"request_metrics", "latency", "ttft", "mean"}).value_or(kNaN);
  e.p99_ttft_s = kNaN;  // the agentic aggregate stops at p95
  e.median_tpot_s = NumAt(d, {"request_metrics", "latency", "tpot", "p50"}).value_or(kNaN);
  e.median_e2el_s = NumAt(d, {"request_metrics", "latency", "e2el", "p50"}).value_or(kNaN);
  e.power_valid = NumAt(d, {"power_valid"}).value_or(0) == 1;
  e.joules_per_output_token.reset(), e.avg_power_w.reset();
  if (e.power_valid) {
    e.joules_per_output_token = NumAt(d, {"joules_per_output_token"});
    e.avg_power_w = NumAt(d, {"avg_power_w"});
  }
}

void AgenticFields(const rapidjson::Value& d, AgenticResult& a) {
  a.kv_offloading = StrAt(d, {"kv_offloading"});
  a.kv_offload_backend = StrAt(d, {"kv_offload_backend", "name"});
  a.p50_ttft_s = NumAt(d, {"request_metrics", "latency", "ttft", "p50"}).value_or(kNaN);
  a.gpu_cache_hit_rate = NumAt(d, {"server_metrics", "cache", "gpu_cache_hit_rate"});
  // The offload tier's rate only for an entry that has one: vLLM counts
  // external_kv_transfer tokens (0) without one too.
  if (a.kv_offloading != "none") a.cpu_cache_hit_rate = NumAt(d, {"server_metrics", "cache", "cpu_cache_hit_rate"});
  a.overall_cache_hit_rate = NumAt(d, {"server_metrics", "cache", "overall_cache_hit_rate"});
  a.gpu_kv_usage_peak = NumAt(d, {"server_metrics", "kv_cache", "gpu_usage_pct"});
  a.requests_successful = IntOf(At(d, {"num_requests_successful"})).value_or(0);
  a.requests_total = IntOf(At(d, {"num_requests_total"})).value_or(0);
}

// The "ix" key's dp_ranks: a rank without a whole "rank" in
// [0, kMaxDpRanks) is skipped (charts index bars by rank); sorted by rank.
void DpRanks(const rapidjson::Value& d, AgenticResult& a) {
  const rapidjson::Value* ranks = At(d, {"ix", "dp_ranks"});
  if (ranks == nullptr || !ranks->IsArray()) return;
  for (const rapidjson::Value& r : ranks->GetArray()) {
    const std::optional<int64_t> rank = IntOf(At(r, {"rank"}));
    if (!rank || *rank < 0 || *rank >= static_cast<int64_t>(kMaxDpRanks) || a.dp_ranks.size() >= kMaxDpRanks) continue;
    DpRankStats s;
    s.rank = *rank;
    s.requests = IntOf(At(r, {"requests"}));
    s.sessions = IntOf(At(r, {"sessions"}));
    s.prefix_cache_hit_rate = NumAt(r, {"prefix_cache_hit_rate"});
    a.dp_ranks.push_back(s);
  }
  std::stable_sort(a.dp_ranks.begin(), a.dp_ranks.end(),
                   [](const DpRankStats& x, const DpRankStats& y) { return x.rank < y.rank; });
}

// InferenceX's percentile (linear between the two nearest ranks).
double Percentile(std::vector<double>& v, double p) {
  std::sort(v.begin(), v.end());
  const double k = static_cast<double>(v.size() - 1) * p / 100.0;
  const auto f = static_cast<size_t>(k);
  return f + 1 >= v.size() ? v[f] : v[f] + (k - static_cast<double>(f)) * (v[f + 1] - v[f]);
}

// A successful profiling record's (turn, TTFT in s), as InferenceX keeps
// records: warmup is any phase present and not "profiling"; an error is
// any truthy "error"; a metric is {"value": V} or V, kept when > 0.
std::optional<std::pair<int64_t, double>> TurnAndTtft(const rapidjson::Value& rec) {
  const rapidjson::Value* phase = At(rec, {"metadata", "benchmark_phase"});
  const bool profiling = phase == nullptr || phase->IsNull() ||
                         (phase->IsString() && std::string_view(phase->GetString()) == "profiling");
  if (!profiling) return std::nullopt;
  if (Truthy(At(rec, {"error"}))) return std::nullopt;
  const std::optional<int64_t> turn = IntOf(At(rec, {"metadata", "turn_index"}));
  const rapidjson::Value* m = At(rec, {"metrics", "time_to_first_token"});
  const std::optional<double> ms = m != nullptr && m->IsObject() ? NumAt(*m, {"value"}) : Finite(m);
  if (!turn || *turn < 0 || *turn >= kMaxTurnIndex || !ms || *ms <= 0) return std::nullopt;
  return std::make_pair(*turn, *ms / 1000.0);
}

enum class LineRead { kEnd, kLine, kTooLong };

// The next line into `buf` (NUL-terminated); a line that does not fit is
// skipped whole, so one huge line costs no memory.
LineRead NextLine(std::istream& in, std::vector<char>& buf) {
  in.getline(buf.data(), static_cast<std::streamsize>(buf.size()));
  if (in.bad()) return LineRead::kEnd;
  if (!in.fail()) return LineRead::kLine;
  if (in.gcount() == 0) return LineRead::kEnd;
  in.clear();
  in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  return LineRead::kTooLong;
}

// The highest usage in a slice of each series, by slice start (AIPerf cuts
// every series at the same times, so slices of different engines line up).
struct Slice {
  int64_t end_ns = 0;
  double pct = 0;
};

// Adds one engine's slices; whether it had any usable one.
bool AddSeries(const rapidjson::Value& series, std::map<int64_t, Slice>& slices) {
  const rapidjson::Value* ts = At(series, {"timeslices"});
  if (ts == nullptr || !ts->IsArray()) return false;
  bool any = false;
  for (const rapidjson::Value& s : ts->GetArray()) {
    const std::optional<int64_t> start = IntOf(At(s, {"start_ns"}));
    const std::optional<double> avg = NumAt(s, {"avg"});
    if (!start || !avg || *avg < 0) continue;
    const int64_t end = std::max(*start, IntOf(At(s, {"end_ns"})).value_or(*start));
    const double pct = (*avg > 1.5 ? *avg / 100.0 : *avg) * 100.0;  // InferenceX's normalize_fraction
    auto [it, fresh] = slices.try_emplace(*start, Slice{end, pct});
    if (!fresh) it->second = Slice{std::max(it->second.end_ns, end), std::max(it->second.pct, pct)};
    any = true;
  }
  return any;
}

// `slices` as at most `max_points` points, each the highest of a run of
// consecutive slices (peaks are what a reader looks for).
std::vector<KvUsagePoint> Merge(const std::map<int64_t, Slice>& slices, size_t max_points) {
  std::vector<KvUsagePoint> out;
  if (slices.empty() || max_points == 0) return out;
  const size_t per = (slices.size() + max_points - 1) / max_points;
  const double t0 = static_cast<double>(slices.begin()->first);
  size_t i = 0;
  for (const auto& [start, s] : slices) {
    const double t = (static_cast<double>(start) - t0) / 1e9, end = (static_cast<double>(s.end_ns) - t0) / 1e9;
    if (i++ % per == 0) {
      out.push_back({t, std::max(t, end), s.pct});
    } else {
      out.back().pct = std::max(out.back().pct, s.pct);
      out.back().end_s = std::max(out.back().end_s, end);
    }
  }
  return out;
}

// InferenceX's artifact directory: aiperf_artifacts when it holds
// profile_export.jsonl, else its first child (by name) that does.
std::string ArtifactDir(const std::string& result_dir) {
  namespace fs = std::filesystem;
  const std::string top = result_dir + "/aiperf_artifacts";
  std::error_code ec;
  if (fs::exists(top + "/profile_export.jsonl", ec)) return top;
  std::vector<std::string> children;
  for (fs::directory_iterator it(top, ec), end; !ec && it != end && children.size() < kMaxSearchedChildren;
       it.increment(ec)) {
    if (it->is_directory(ec)) children.push_back(it->path().string());
  }
  std::sort(children.begin(), children.end());
  for (const std::string& c : children) {
    if (fs::exists(c + "/profile_export.jsonl", ec)) return c;
  }
  return top;
}

// The profile's records, streamed from a regular file (not a link, FIFO
// or device: the sweep directory is written by jobs).
void ReadProfile(const std::string& path, AgenticResult& a) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(std::filesystem::symlink_status(path, ec))) return;
  std::ifstream in(path, std::ios::binary);
  if (in) a.ttft_by_turn = ReadTtftByTurn(in, kMaxProfileLines, &a.profile_truncated);
}

// RESULT_FILENAME when it is a plain file name (no folder, not hidden).
std::string PlainName(const std::string& name) {
  if (name.empty() || name[0] == '.' || name.find('/') != std::string::npos || name.find('\0') != std::string::npos) {
    return "";
  }
  return name;
}

// A shell word's value: '...' literally, \c as c, "..." as its contents.
std::string Unquote(std::string_view v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] == '\'' || v[i] == '"') {
      const size_t close = v.find(v[i], i + 1);
      out += v.substr(i + 1, close == std::string_view::npos ? std::string_view::npos : close - i - 1);
      if (close == std::string_view::npos) break;
      i = close;
    } else if (v[i] == '\\' && i + 1 < v.size()) {
      out += v[++i];
    } else {
      out += v[i];
    }
  }
  return out;
}

}  // namespace

std::string EnvFileValue(std::string_view text, std::string_view name) {
  std::string value;
  size_t at = 0;
  while (at < text.size()) {
    size_t nl = text.find('\n', at);
    if (nl == std::string_view::npos) nl = text.size();
    const std::string_view line = text.substr(at, nl - at);
    if (line.size() > name.size() && line.substr(0, name.size()) == name && line[name.size()] == '=') {
      value = Unquote(line.substr(name.size() + 1));  // the last one wins, as in the shell
    }
    at = nl + 1;
  }
  return value;
}

bool ReadAgenticAggregate(std::string_view text, ReportEntry& e) {
  rapidjson::Document d;
  if (d.Parse<kParseFlags>(text.data(), text.size()).HasParseError() || !d.IsObject()) return false;
  e.scenario = kScenarioAgentic;
  Headline(d, e);
  AgenticFields(d, e.agentic);
  DpRanks(d, e.agentic);
  return true;
}

std::vector<TurnTtft> ReadTtftByTurn(std::istream& in, size_t max_lines, bool* truncated) {
  std::map<int64_t, std::vector<double>> by_turn;
  std::vector<char> buf(kMaxProfileLineBytes + 1);
  *truncated = false;
  for (size_t lines = 0;; ++lines) {
    const LineRead r = NextLine(in, buf);
    if (r == LineRead::kEnd) break;
    if (lines == max_lines) {
      *truncated = true;
      break;
    }
    rapidjson::Document rec;
    if (r == LineRead::kTooLong || rec.Parse<kParseFlags>(buf.data()).HasParseError() || !rec.IsObject()) continue;
    if (const auto t = TurnAndTtft(rec)) by_turn[t->first].push_back(t->second);
  }
  std::vector<TurnTtft> out;
  for (auto& [turn, v] : by_turn) {
    double sum = 0;
    for (const double x : v) sum += x;
    out.push_back({turn, static_cast<int64_t>(v.size()), sum / static_cast<double>(v.size()), Percentile(v, 50)});
  }
  return out;
}

std::vector<KvUsagePoint> ReadKvUsage(std::string_view text, size_t max_points, int64_t* engines) {
  *engines = 0;
  rapidjson::Document d;
  if (text.empty() || d.Parse<kParseFlags>(text.data(), text.size()).HasParseError() || !d.IsObject()) return {};
  for (const char* name : {"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage"}) {
    const rapidjson::Value* series = At(d, {"metrics", name, "series"});
    if (series == nullptr || !series->IsArray()) continue;
    std::map<int64_t, Slice> slices;
    for (const rapidjson::Value& s : series->GetArray()) *engines += AddSeries(s, slices) ? 1 : 0;
    if (!slices.empty()) return Merge(slices, max_points);
    *engines = 0;
  }
  return {};
}

std::string AgenticAggregateName(const std::string& result_dir) {
  const std::string env = ReadBounded(result_dir + "/benchmark.env", 1 << 20);
  const std::string name = PlainName(EnvFileValue(env, "RESULT_FILENAME"));
  return name.empty() ? "" : name + ".json";
}

void ReadAgenticEntry(const std::string& result_dir, ReportEntry& e) {
  if (result_dir.empty()) return;  // never started: nothing to read (and no "/benchmark.env")
  const std::string env = ReadBounded(result_dir + "/benchmark.env", 1 << 20);
  if (EnvFileValue(env, "SCENARIO_TYPE") == kScenarioAgentic) e.scenario = kScenarioAgentic;
  if (!IsAgentic(e)) return;
  const std::string name = PlainName(EnvFileValue(env, "RESULT_FILENAME"));
  if (name.empty() || !ReadAgenticAggregate(ReadBounded(result_dir + "/" + name + ".json", kMaxAggregateBytes), e)) {
    return;
  }
  const std::string artifacts = ArtifactDir(result_dir);
  ReadProfile(artifacts + "/profile_export.jsonl", e.agentic);
  e.agentic.kv_usage = ReadKvUsage(ReadBounded(artifacts + "/server_metrics_export.json", kMaxServerMetricsBytes),
                                   kMaxKvUsagePoints, &e.agentic.kv_engines);
}

}  // namespace ix
