#include "submitter/results/agentic_server_metrics.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <cmath>
#include <filesystem>
#include <map>
#include <regex>
#include <set>

#include "core/base/file_text.h"
#include "core/base/text.h"

namespace ix {
namespace {

namespace fs = std::filesystem;
using Alloc = rapidjson::Document::AllocatorType;
using rapidjson::Value;
using Opt = std::optional<double>;

const std::vector<std::string> kStatKeys = {"total", "sum", "max", "avg"};
const std::vector<std::string> kGaugeKeys = {"max", "avg", "total"};

Value OptNum(Opt v) { return v ? Value(*v) : Value(); }
Value OptInt(std::optional<int64_t> v) { return v ? Value(*v) : Value(); }

// metric_series: the object series of the named metrics, in order.
std::vector<const Value*> Series(const Value& metrics, const std::vector<std::string>& names) {
  std::vector<const Value*> out;
  for (const std::string& n : names) {
    const auto m = metrics.FindMember(n.c_str());
    if (m == metrics.MemberEnd() || !m->value.IsObject()) continue;
    const auto s = m->value.FindMember("series");
    if (s == m->value.MemberEnd() || !s->value.IsArray()) continue;
    for (const Value& e : s->value.GetArray()) {
      if (e.IsObject()) out.push_back(&e);
    }
  }
  return out;
}

// series_stat: the first of `keys` in series.stats that float() accepts.
Opt SeriesStat(const Value& series, const std::vector<std::string>& keys) {
  const auto st = series.FindMember("stats");
  if (st == series.MemberEnd() || !st->value.IsObject()) return std::nullopt;
  for (const std::string& k : keys) {
    const auto v = st->value.FindMember(k.c_str());
    if (v == st->value.MemberEnd()) continue;
    if (Opt f = PyToFloat(&v->value)) return f;
  }
  return std::nullopt;
}

// gauge_stat(combine="max").
Opt GaugeMax(const Value& metrics, const std::vector<std::string>& names, const SeriesFilter& filter = {}) {
  Opt best;
  for (const Value* s : Series(metrics, names)) {
    if (filter && !filter(*s)) continue;
    const Opt v = SeriesStat(*s, kGaugeKeys);
    if (v && (!best || *v > *best)) best = v;
  }
  return best;
}

Opt NormalizeFraction(Opt v) { return v && *v > 1.5 ? Opt(*v / 100.0) : v; }

// counter_int: int(round(v)), ties to even.
std::optional<int64_t> CounterInt(Opt v) {
  if (!v) return std::nullopt;
  return static_cast<int64_t>(std::nearbyint(*v));
}

// sum_by_label(..., "source"): per label value, in first-seen order.
std::vector<std::pair<std::string, double>> SumByLabel(const Value& metrics, const std::string& name, const char* key) {
  std::vector<std::pair<std::string, double>> out;
  for (const Value* s : Series(metrics, {name})) {
    const std::optional<std::string> label = SeriesLabel(*s, key);
    const Opt v = label ? SeriesStat(*s, kStatKeys) : std::nullopt;
    if (!v) continue;
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& p) { return p.first == *label; });
    if (it == out.end()) out.emplace_back(*label, 0.0), it = out.end() - 1;
    it->second += *v;
  }
  return out;
}

// _source_id: role|endpoint_url|worker_id=..|dp_rank=..|engine=.. (parts present only).
std::string SourceId(const Value& series) {
  std::optional<std::string> comp = SeriesLabel(series, "dynamo_component");
  if (!comp || comp->empty()) comp = SeriesLabel(series, "component");
  const std::string c = comp.value_or("");
  std::string id = c == "prefill" ? "prefill" : (c == "backend" || c == "decode") ? "decode"
                   : (c == "frontend" || c == "router")                          ? "router"
                                                                                  : "combined";
  const auto ep = series.FindMember("endpoint_url");
  if (ep != series.MemberEnd() && PyTruthy(ep->value)) id += "|" + PyStr(ep->value);
  for (const char* k : {"worker_id", "dp_rank", "engine"}) {
    if (auto v = SeriesLabel(series, k)) id += std::string("|") + k + "=" + *v;
  }
  return id;
}

Value Sources(const Value& m, Alloc& a) {
  std::set<std::string> ids;
  for (const Value* s : Series(m, {"vllm:prompt_tokens", "vllm:generation_tokens", "vllm:prefix_cache_hits",
                                   "vllm:prefix_cache_queries", "vllm:kv_cache_usage_perc",
                                   "vllm:prompt_tokens_by_source"})) {
    ids.insert(SourceId(*s));
  }
  Value out(rapidjson::kArrayType);
  for (const std::string& id : ids) {
    const SeriesFilter same = [&id](const Value& s) { return SourceId(s) == id; };
    Value e(rapidjson::kObjectType);
    e.AddMember("id", Value(id.c_str(), a), a);
    e.AddMember("role", Value(id.substr(0, id.find('|')).c_str(), a), a);
    e.AddMember("prompt_tokens", OptNum(SumStat(m, {"vllm:prompt_tokens"}, same)), a);
    e.AddMember("generation_tokens", OptNum(SumStat(m, {"vllm:generation_tokens"}, same)), a);
    e.AddMember("prefix_cache_hit_rate",
                OptNum(MetricRate(SumStat(m, {"vllm:prefix_cache_hits"}, same),
                                  SumStat(m, {"vllm:prefix_cache_queries"}, same))),
                a);
    e.AddMember("gpu_kv_cache_usage_pct",
                OptNum(NormalizeFraction(GaugeMax(m, {"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"}, same))), a);
    out.PushBack(e, a);
  }
  return out;
}

void Set(Value& obj, const char* key, Value v) { obj[key] = v; }

// The rates of the cache object: prefix hits/queries, external hits/queries,
// or from prompt tokens by source when vLLM exports them.
struct CacheRates {
  Opt gpu, cpu, external, overall;
};

void PopulateVllmCache(const Value& m, Value& nested, Alloc& a) {
  const Opt hits = SumStat(m, {"vllm:prefix_cache_hits"}), queries = SumStat(m, {"vllm:prefix_cache_queries"});
  const Opt ext_hits = SumStat(m, {"vllm:external_prefix_cache_hits"});
  const Opt ext_queries = SumStat(m, {"vllm:external_prefix_cache_queries"});
  CacheRates r{MetricRate(hits, queries), MetricRate(ext_hits, ext_queries), MetricRate(ext_hits, ext_queries), {}};
  const auto by_source = SumByLabel(m, "vllm:prompt_tokens_by_source", "source");
  if (!by_source.empty()) {
    auto get = [&](const char* k) -> Opt {
      for (const auto& [n, v] : by_source) {
        if (n == k) return v;
      }
      return std::nullopt;
    };
    const Opt local = get("local_cache_hit"), transfer = get("external_kv_transfer"), compute = get("local_compute");
    double total = 0.0;  // Python 3.11's sum(): left to right
    for (const auto& p : by_source) total += p.second;
    if (total > 0) {
      if (local) r.gpu = *local / total;
      if (transfer) r.cpu = r.external = *transfer / total;
      r.overall = (local.value_or(0.0) + transfer.value_or(0.0)) / total;
    }
    Value pbs(rapidjson::kObjectType), raw(rapidjson::kObjectType);
    for (const auto& [n, v] : by_source) raw.AddMember(Value(n.c_str(), a), Value(v), a);
    pbs.AddMember("gpu_cache_hit", OptNum(local), a);
    pbs.AddMember("cpu_or_external_cache_hit", OptNum(transfer), a);
    pbs.AddMember("computed", OptNum(compute), a);
    pbs.AddMember("raw", raw, a);
    Set(nested["tokens"], "prompt_by_source", std::move(pbs));
  } else if (r.gpu) {
    r.overall = r.gpu;
  }
  Value& c = nested["cache"];
  Set(c, "gpu_cache_hit_rate", OptNum(r.gpu));
  Set(c, "cpu_cache_hit_rate", OptNum(r.cpu));
  Set(c, "external_cache_hit_rate", OptNum(r.external));
  Set(c, "overall_cache_hit_rate", OptNum(r.overall));
  Set(c, "prefix_cache_hits", OptNum(hits));
  Set(c, "prefix_cache_queries", OptNum(queries));
  Set(c, "external_prefix_cache_hits", OptNum(ext_hits));
  Set(c, "external_prefix_cache_queries", OptNum(ext_queries));
}

void PopulateVllmOffload(const Value& m, Value& nested) {
  const Opt g2c = SumStat(m, {"vllm:kv_offload_bytes_gpu_to_cpu"}), c2g = SumStat(m, {"vllm:kv_offload_bytes_cpu_to_gpu"});
  const Opt tg2c = SumStat(m, {"vllm:kv_offload_time_gpu_to_cpu"}), tc2g = SumStat(m, {"vllm:kv_offload_time_cpu_to_gpu"});
  Value& o = nested["kv_offload"];
  Set(o, "bytes_gpu_to_cpu", OptNum(g2c));
  Set(o, "bytes_cpu_to_gpu", OptNum(c2g));
  Set(o, "time_gpu_to_cpu", OptNum(tg2c));
  Set(o, "time_cpu_to_gpu", OptNum(tc2g));
  Set(o, "bandwidth_gpu_to_cpu_bytes_per_second", OptNum(MetricRate(g2c, tg2c)));
  Set(o, "bandwidth_cpu_to_gpu_bytes_per_second", OptNum(MetricRate(c2g, tc2g)));
}

// VllmBackend.populate.
void PopulateVllm(const Value& m, Value& nested, Alloc& a) {
  PopulateVllmCache(m, nested, a);
  Value& kv = nested["kv_cache"];
  Set(kv, "gpu_usage_pct", OptNum(NormalizeFraction(GaugeMax(m, {"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"}))));
  Set(kv, "cpu_usage_pct", OptNum(NormalizeFraction(GaugeMax(m, {"vllm:cpu_kv_cache_usage_perc"}))));
  PopulateVllmOffload(m, nested);
  Set(nested["tokens"], "prompt_total", OptInt(CounterInt(SumStat(m, {"vllm:prompt_tokens"}))));
  Set(nested["tokens"], "generation_total", OptInt(CounterInt(SumStat(m, {"vllm:generation_tokens"}))));
  Set(nested, "sources", Sources(m, a));
}

Value Nulls(std::initializer_list<const char*> keys, Alloc& a) {
  Value o(rapidjson::kObjectType);
  for (const char* k : keys) {
    if (std::string(k) == "cached_tokens_by_source") o.AddMember(Value(k, a), Value(rapidjson::kObjectType), a);
    else o.AddMember(Value(k, a), Value(), a);
  }
  return o;
}

// empty_server_metrics: the skeleton every adapter fills in.
Value Skeleton(bool present, int64_t count, Alloc& a) {
  Value s(rapidjson::kObjectType);
  s.AddMember("present", present, a);
  s.AddMember("adapter", "none", a);
  s.AddMember("metric_count", count, a);
  s.AddMember("cache", Nulls({"gpu_cache_hit_rate", "cpu_cache_hit_rate", "external_cache_hit_rate",
                              "overall_cache_hit_rate", "prefix_cache_hits", "prefix_cache_queries",
                              "external_prefix_cache_hits", "external_prefix_cache_queries", "cached_tokens_by_source",
                              "frontend_cache_hit_rate", "router_kv_hit_rate", "router_shared_cache_hit_rate",
                              "frontend_cached_tokens", "frontend_input_tokens"}, a), a);
  s.AddMember("kv_cache", Nulls({"gpu_usage_pct", "gpu_total_tokens", "cpu_usage_pct", "cpu_used_tokens",
                                 "cpu_total_tokens"}, a), a);
  s.AddMember("kv_offload", Nulls({"bytes_gpu_to_cpu", "bytes_cpu_to_gpu", "time_gpu_to_cpu", "time_cpu_to_gpu",
                                   "bandwidth_gpu_to_cpu_bytes_per_second", "bandwidth_cpu_to_gpu_bytes_per_second"}, a), a);
  Value tokens = Nulls({"prompt_total", "generation_total", "requests_completed"}, a);
  Value pbs = Nulls({"gpu_cache_hit", "cpu_or_external_cache_hit", "computed"}, a);
  pbs.AddMember("raw", Value(rapidjson::kObjectType), a);
  tokens.AddMember("prompt_by_source", pbs, a);
  s.AddMember("tokens", tokens, a);
  s.AddMember("sources", Value(rapidjson::kArrayType), a);
  return s;
}

// _record_token_sum: Σ int(value) over the records that have one.
std::optional<int64_t> RecordTokenSum(const AgenticRecords& r, const char* key) {
  std::optional<int64_t> total;
  for (const Value& rec : r.kept.GetArray()) {
    if (auto v = PyToInt(RecordMetric(rec, key))) total = total.value_or(0) + *v;
  }
  return total;
}

bool AnyPrefix(const Value& m, std::initializer_list<const char*> prefixes) {
  for (const auto& e : m.GetObject()) {
    for (const char* p : prefixes) {
      if (std::string_view(e.name.GetString()).substr(0, std::strlen(p)) == p) return true;
    }
  }
  return false;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// detect_backend: the first adapter that matches, in Python's order.
std::string DetectBackend(const Value& m, const std::string& framework) {
  const std::string f = Lower(framework);
  const bool none = m.MemberCount() == 0;
  if (f.rfind("dynamo", 0) == 0 || AnyPrefix(m, {"dynamo_"})) return "dynamo-vllm";
  if (AnyPrefix(m, {"atom:", "atom_"}) || (none && f == "atom")) return "atom";
  if (AnyPrefix(m, {"sglang:"}) || (none && f == "sglang")) return "sglang";
  if (AnyPrefix(m, {"vllm:"}) || (none && f == "vllm")) return "vllm";
  return "";
}

// repr() of a str (no quotes or backslashes expected in a framework name).
std::string PyRepr(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' || c == '\\' ? std::string("\\") + c : std::string(1, c);
  return out + "'";
}

Error Unsupported(const Value& m, const std::string& framework) {
  std::vector<std::string> names;
  for (const auto& e : m.GetObject()) names.emplace_back(e.name.GetString(), e.name.GetStringLength());
  std::sort(names.begin(), names.end());
  std::string preview;
  for (size_t i = 0; i < names.size() && i < 10; ++i) preview += (i ? ", " : "") + names[i];
  return Error{"Unsupported agentic server metrics backend; framework=" + PyRepr(Lower(framework)) +
               ", metric_names=[" + preview + "]"};
}

std::optional<int64_t> LogCapacity(const std::vector<std::string>& paths) {
  std::optional<int64_t> total;
  for (const std::string& p : paths) {
    int err = 0;
    std::string text = ReadFileText(p, &err);
    if (err) continue;
    if (text.size() > (size_t{64} << 20)) text.resize(size_t{64} << 20);
    text.erase(std::remove(text.begin(), text.end(), '\0'), text.end());
    if (auto v = VllmKvCapacityFromLog(text)) total = total.value_or(0) + *v;
  }
  return total;
}

}  // namespace

const Value& ServerMetricsIndex(const Value& doc) {
  static const Value kEmpty(rapidjson::kObjectType);
  if (!doc.IsObject()) return kEmpty;
  const auto m = doc.FindMember("metrics");
  return m != doc.MemberEnd() && m->value.IsObject() ? m->value : kEmpty;
}

std::optional<double> SumStat(const Value& metrics, const std::vector<std::string>& names, const SeriesFilter& filter) {
  double total = 0.0;
  bool found = false;
  for (const Value* s : Series(metrics, names)) {
    if (filter && !filter(*s)) continue;
    if (const Opt v = SeriesStat(*s, kStatKeys)) total += *v, found = true;
  }
  return found ? Opt(total) : std::nullopt;
}

std::optional<std::string> SeriesLabel(const Value& series, const char* key) {
  const auto l = series.FindMember("labels");
  if (l == series.MemberEnd() || !l->value.IsObject()) return std::nullopt;
  const auto v = l->value.FindMember(key);
  if (v == l->value.MemberEnd() || v->value.IsNull()) return std::nullopt;
  return PyStr(v->value);
}

std::optional<double> MetricRate(std::optional<double> a, std::optional<double> b) {
  if (!a || !b || *b <= 0) return std::nullopt;
  return *a / *b;
}

Result<Value> AgenticServerMetrics(const Value& export_doc, const std::string& framework, const AgenticRecords& records,
                                   const std::vector<std::string>& log_paths, std::vector<std::string>& warnings,
                                   Alloc& a) {
  const Value& m = ServerMetricsIndex(export_doc);
  const bool present = m.MemberCount() > 0;
  Value nested = Skeleton(present, static_cast<int64_t>(m.MemberCount()), a);
  const std::string backend = DetectBackend(m, framework);
  if (!present) warnings.push_back("server_metrics_export.json missing or empty");
  if (present && backend.empty()) return Unsupported(m, framework);
  if (!backend.empty() && backend != "vllm") {
    return Error{"the " + backend + " agentic server metrics adapter of InferenceX is not ported (framework=" +
                 PyRepr(Lower(framework)) + ")"};
  }
  if (present) {
    nested["adapter"] = "vllm";
    PopulateVllm(m, nested, a);
  }
  if (backend == "vllm") {
    if (auto cap = LogCapacity(log_paths)) nested["kv_cache"]["gpu_total_tokens"] = *cap;
  }
  Value& t = nested["tokens"];
  if (t["prompt_total"].IsNull()) Set(t, "prompt_total", OptInt(RecordTokenSum(records, "input_sequence_length")));
  if (t["generation_total"].IsNull()) {
    Set(t, "generation_total", OptInt(RecordTokenSum(records, "output_sequence_length")));
  }
  t["requests_completed"] = records.kept_count();
  return nested;
}

std::vector<std::string> FindServerLogPaths(const std::string& result_dir) {
  std::vector<fs::path> paths;
  std::error_code ec;
  fs::path dir = fs::path(result_dir).lexically_normal();
  if (dir.has_filename() == false && dir.has_parent_path() && dir != dir.root_path()) dir = dir.parent_path();
  if (fs::is_regular_file(dir / "server.log", ec)) paths.push_back(dir / "server.log");
  fs::path root = dir;
  for (int level = 0; level < 4; ++level) {
    std::vector<fs::path> found;
    for (const auto& e : fs::directory_iterator(root.empty() ? "." : root, ec)) {
      const std::string name = e.path().filename().string();
      if (name.rfind("watchtower-", 0) == 0 && name.size() >= 15 && name.substr(name.size() - 4) == ".out" &&
          e.is_regular_file(ec)) {
        found.push_back(e.path());
      }
    }
    std::sort(found.begin(), found.end());
    paths.insert(paths.end(), found.begin(), found.end());
    if (root.empty() || root == root.parent_path()) break;
    root = root.parent_path();
  }
  std::vector<std::string> out;
  std::set<fs::path> seen;
  for (const fs::path& p : paths) {
    if (seen.insert(fs::weakly_canonical(p, ec)).second) out.push_back(p.string());
  }
  return out;
}

std::optional<int64_t> VllmKvCapacityFromLog(std::string_view log) {
  static const std::regex kSize(R"(GPU KV cache size:\s*([\d,]+)\s*tokens)");
  static const std::regex kTag(R"(\((EngineCore(?:_DP\d+)?)\s+pid=\d+\))");
  std::map<std::string, int64_t> per_engine;
  int64_t bare = 0;
  bool bare_found = false;
  for (std::string_view raw : Split(log, '\n')) {
    if (raw.find("GPU KV cache size") == std::string_view::npos) continue;
    const std::string line(raw);
    std::smatch size, tag;
    if (!std::regex_search(line, size, kSize)) continue;
    std::string digits = size.str(1);
    digits.erase(std::remove(digits.begin(), digits.end(), ','), digits.end());
    int64_t tokens = 0;
    if (!ParseSigned(digits, tokens) || tokens <= 0) continue;
    if (std::regex_search(line, tag, kTag)) per_engine[tag.str(1)] = tokens;
    else bare += tokens, bare_found = true;
  }
  if (!per_engine.empty()) {
    int64_t sum = 0;
    for (const auto& [_, v] : per_engine) sum += v;
    return sum;
  }
  return bare_found ? std::optional<int64_t>(bare) : std::nullopt;
}

}  // namespace ix
