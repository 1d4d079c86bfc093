#include "submitter/results/agentic_result.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "core/base/file_text.h"
#include "core/base/text.h"
#include "submitter/results/agentic_power.h"
#include "submitter/results/agentic_request_metrics.h"
#include "submitter/results/agentic_server_metrics.h"
#include "submitter/results/agentic_validation.h"
#include "submitter/results/python_json.h"

namespace ix {
namespace {

namespace fs = std::filesystem;
using Alloc = rapidjson::Document::AllocatorType;
using rapidjson::Value;
constexpr unsigned kParseFlags = rapidjson::kParseFullPrecisionFlag | rapidjson::kParseNanAndInfFlag;

std::string Get(const EnvLookup& env, const char* name, const char* def = "") {
  return env(name).value_or(def);
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// int(text), or int()'s ValueError message.
Result<int64_t> PyInt(const std::string& text) {
  std::string t(Trim(text, " \t\n\r\v\f"));
  if (!t.empty() && t[0] == '+') t.erase(0, 1);
  int64_t v = 0;
  if (t.empty() || !ParseSigned(t, v)) return Error{"invalid literal for int() with base 10: '" + text + "'"};
  return v;
}

// env_int: the default when unset or empty.
Result<int64_t> EnvInt(const EnvLookup& env, const char* name, int64_t def = 0) {
  const std::optional<std::string> v = env(name);
  if (!v || v->empty()) return def;
  return PyInt(*v);
}

bool EnvBool(const EnvLookup& env, const char* name) {
  const std::string v = Lower(Get(env, name));
  return v == "1" || v == "true" || v == "yes" || v == "on";
}

bool NonEmptyStrings(const Value& o) {
  for (const auto& m : o.GetObject()) {
    if (!m.value.IsString() || m.value.GetStringLength() == 0) return false;
  }
  return true;
}

bool KeysAre(const Value& o, std::set<std::string> keys) {
  std::set<std::string> have;
  for (const auto& m : o.GetObject()) have.insert(m.name.GetString());
  return have == keys;
}

// optional_component_metadata / optional_kv_offload_backend_metadata: the
// parsed object, a null value for unset/""/"null", or the SystemExit text.
Result<Value> ComponentMetadata(const EnvLookup& env, const char* name, bool version_optional, Alloc& a) {
  const std::optional<std::string> raw = env(name);
  if (!raw || raw->empty() || *raw == "null") return Value();
  rapidjson::Document d;
  if (d.Parse<kParseFlags>(raw->c_str()).HasParseError()) return Error{std::string(name) + " must contain valid JSON"};
  const std::string n = name;
  if (!version_optional) {
    if (!d.IsObject() || !KeysAre(d, {"name", "version"})) return Error{n + " must contain exactly 'name' and 'version'"};
    if (!NonEmptyStrings(d)) return Error{n + " name and version must be non-empty strings"};
  } else {
    if (!d.IsObject()) return Error{n + " may contain only 'name' and 'version'"};
    for (const auto& m : static_cast<const Value&>(d).GetObject()) {
      const std::string k = m.name.GetString();
      if (k != "name" && k != "version") return Error{n + " may contain only 'name' and 'version'"};
    }
    if (!d.HasMember("name")) return Error{n + " must contain 'name' and optional 'version'"};
    if (!NonEmptyStrings(d)) return Error{n + " values must be non-empty strings"};
  }
  return Value(d, a);
}

// _validate_kv_offload_env: KV_OFFLOADING and the backend's metadata.
Result<std::pair<std::string, Value>> KvOffload(const EnvLookup& env, Alloc& a) {
  const std::string kv = Get(env, "KV_OFFLOADING");
  if (kv.empty()) return Error{"Missing required environment variable: KV_OFFLOADING"};
  const std::string backend = Get(env, "KV_OFFLOAD_BACKEND");
  Result<Value> meta = ComponentMetadata(env, "KV_OFFLOAD_BACKEND_METADATA", true, a);
  if (!meta) return meta.error();
  const Value& m = meta.value();
  if (kv == "none") {
    if (!backend.empty() || !m.IsNull()) return Error{"KV_OFFLOAD_BACKEND must be empty when KV_OFFLOADING=none"};
  } else {
    if (backend.empty() || backend == "none" || m.IsNull()) {
      return Error{"KV_OFFLOAD_BACKEND is required when KV_OFFLOADING is enabled"};
    }
    if (backend != m["name"].GetString()) return Error{"KV_OFFLOAD_BACKEND must match KV_OFFLOAD_BACKEND_METADATA.name"};
  }
  return std::make_pair(kv, std::move(meta.value()));
}

// _gpu_shape: the topology fields, the GPU count, tp, ep and dp_attention.
struct GpuShape {
  Value fields{rapidjson::kObjectType};
  int64_t num_gpus = 0, tp = 1, ep = 1;
  std::string dp_attention;
};

#define IX_ENV_INT(var, name, def)                \
  int64_t var = 0;                                \
  if (auto r_ = EnvInt(env, name, def); !r_) {    \
    return r_.error();                            \
  } else {                                        \
    var = r_.value();                             \
  }

Result<GpuShape> MultinodeShape(const EnvLookup& env, GpuShape s, Alloc& a) {
  IX_ENV_INT(p_nw, "PREFILL_NUM_WORKERS", 0) IX_ENV_INT(p_tp, "PREFILL_TP", 0) IX_ENV_INT(p_pp, "PREFILL_PP_SIZE", 1)
  IX_ENV_INT(p_dcp, "PREFILL_DCP_SIZE", 1) IX_ENV_INT(p_pcp, "PREFILL_PCP_SIZE", 1) IX_ENV_INT(p_ep, "PREFILL_EP", 1)
  IX_ENV_INT(d_nw, "DECODE_NUM_WORKERS", 0) IX_ENV_INT(d_tp, "DECODE_TP", 0) IX_ENV_INT(d_pp, "DECODE_PP_SIZE", 1)
  IX_ENV_INT(d_dcp, "DECODE_DCP_SIZE", 1) IX_ENV_INT(d_pcp, "DECODE_PCP_SIZE", 1) IX_ENV_INT(d_ep, "DECODE_EP", 1)
  if (std::min({p_pp, p_dcp, p_pcp, d_pp, d_dcp, d_pcp}) <= 0) {
    return Error{"Multinode PP, DCP, and PCP sizes must be positive integers."};
  }
  const std::string p_hw = Get(env, "PREFILL_HARDWARE"), d_hw = Get(env, "DECODE_HARDWARE");
  if (p_hw.empty() != d_hw.empty()) return Error{"PREFILL_HARDWARE and DECODE_HARDWARE must be specified together."};
  const int64_t p_gpus = p_nw * p_tp * p_pp * p_pcp, d_gpus = d_nw * d_tp * d_pp * d_pcp;
  s.num_gpus = p_gpus + d_gpus;
  if (d_gpus <= 0) d_tp = 0, d_ep = 0, d_pp = 1, d_dcp = 1, d_pcp = 1;  // aggregated: one worker
  s.tp = p_tp + d_tp;
  s.ep = std::max(p_ep, d_ep);
  s.dp_attention = EnvBool(env, "PREFILL_DP_ATTN") || EnvBool(env, "DECODE_DP_ATTN") ? "true" : "false";
  auto add = [&](const char* k, int64_t v) { s.fields.AddMember(Value(k, a), Value(v), a); };
  auto add_s = [&](const char* k, const std::string& v) { s.fields.AddMember(Value(k, a), Value(v.c_str(), a), a); };
  add("prefill_num_workers", p_nw), add("prefill_tp", p_tp), add("prefill_pp", p_pp), add("prefill_dcp_size", p_dcp);
  add("prefill_pcp_size", p_pcp), add("prefill_ep", p_ep), add_s("prefill_dp_attention", Get(env, "PREFILL_DP_ATTN", "false"));
  add("num_prefill_gpu", p_gpus), add("decode_num_workers", d_nw), add("decode_tp", d_tp), add("decode_pp", d_pp);
  add("decode_dcp_size", d_dcp), add("decode_pcp_size", d_pcp), add("decode_ep", d_ep);
  add_s("decode_dp_attention", Get(env, "DECODE_DP_ATTN", "false")), add("num_decode_gpu", d_gpus);
  if (!p_hw.empty()) add_s("prefill_hw", p_hw), add_s("decode_hw", d_hw);
  return s;
}

Result<GpuShape> Shape(const EnvLookup& env, Alloc& a) {
  GpuShape s;
  IX_ENV_INT(tp, "TP", 1) IX_ENV_INT(ep, "EP_SIZE", 1)
  s.tp = tp, s.ep = ep, s.dp_attention = Get(env, "DP_ATTENTION", "false");
  if (EnvBool(env, "IS_MULTINODE")) return MultinodeShape(env, std::move(s), a);
  IX_ENV_INT(pp, "PP_SIZE", 1) IX_ENV_INT(dcp, "DCP_SIZE", 1) IX_ENV_INT(pcp, "PCP_SIZE", 1)
  if (pp <= 0 || dcp <= 0 || pcp <= 0) return Error{"PP_SIZE, DCP_SIZE, and PCP_SIZE must be positive integers."};
  s.fields.AddMember("pp", pp, a);
  s.fields.AddMember("dcp_size", dcp, a);
  s.fields.AddMember("pcp_size", pcp, a);
  s.num_gpus = tp * pp * pcp;
  return s;
}

#undef IX_ENV_INT

Value Str(const std::string& s, Alloc& a) { return Value(s.c_str(), a); }

// The identity fields, in build_agg's order, up to request_accounting.
Result<Ok> AddIdentity(Value& agg, const EnvLookup& env, const GpuShape& s, Value kv_backend, const std::string& kv,
                       const AgenticRecords& r, Alloc& a) {
  const Result<int64_t> conc = PyInt(Get(env, "CONC", "0"));
  if (!conc) return conc.error();
  const Result<int64_t> dram = EnvInt(env, "TOTAL_CPU_DRAM_GB");
  if (!dram) return dram.error();
  agg.AddMember("hw", Str(Get(env, "RUNNER_TYPE"), a), a);
  agg.AddMember("conc", conc.value(), a);
  agg.AddMember("image", Str(Get(env, "IMAGE"), a), a);
  agg.AddMember("recipe_fingerprint", Str(Get(env, "RECIPE_FINGERPRINT"), a), a);
  agg.AddMember("model", Str(Get(env, "MODEL"), a), a);
  agg.AddMember("infmax_model_prefix", Str(Get(env, "MODEL_PREFIX"), a), a);
  agg.AddMember("framework", Str(Get(env, "FRAMEWORK"), a), a);
  agg.AddMember("precision", Str(Get(env, "PRECISION"), a), a);
  agg.AddMember("spec_decoding", Str(Get(env, "SPEC_DECODING", "none"), a), a);
  agg.AddMember("disagg", EnvBool(env, "DISAGG"), a);
  agg.AddMember("scenario_type", "agentic-coding", a);
  agg.AddMember("is_multinode", EnvBool(env, "IS_MULTINODE"), a);
  agg.AddMember("tp", s.tp, a);
  agg.AddMember("ep", s.ep, a);
  agg.AddMember("dp_attention", Str(s.dp_attention, a), a);
  agg.AddMember("kv_offloading", Str(kv, a), a);
  agg.AddMember("kv_offload_backend", kv_backend, a);
  agg.AddMember("allocated_cpu_dram_gb", dram.value(), a);
  agg.AddMember("num_requests_total", r.total, a);
  agg.AddMember("num_requests_successful", r.kept_count(), a);
  agg.AddMember("request_accounting", RequestAccounting(r, a), a);
  return Ok{};
}

// The dataset description AIPerf records (metadata.dataset), when an object.
const Value* Dataset(const Value& aggregate) {
  if (!aggregate.IsObject()) return nullptr;
  const auto m = aggregate.FindMember("metadata");
  if (m == aggregate.MemberEnd() || !m->value.IsObject()) return nullptr;
  const auto d = m->value.FindMember("dataset");
  return d != m->value.MemberEnd() && d->value.IsObject() ? &d->value : nullptr;
}

// A JSON file of the artifacts, parsed; an empty object when absent.
Result<rapidjson::Document> ReadOptionalJson(const std::string& path) {
  rapidjson::Document d(rapidjson::kObjectType);
  std::error_code ec;
  if (!fs::exists(path, ec)) return d;
  int err = 0;
  const std::string text = ReadFileText(path, &err);
  if (err) return Error{path + ": " + std::strerror(err)};
  if (d.Parse<kParseFlags>(text.c_str()).HasParseError()) return Error{path + ": not JSON"};
  return d;
}

}  // namespace

Result<rapidjson::Document> BuildAgenticAgg(const AgenticRecords& r, const Value& aggregate, const Value& server_metrics,
                                            const EnvLookup& env, const std::vector<std::string>& log_paths) {
  rapidjson::Document agg(rapidjson::kObjectType);
  Alloc& a = agg.GetAllocator();
  auto kv = KvOffload(env, a);
  if (!kv) return kv.error();
  auto shape = Shape(env, a);
  if (!shape) return shape.error();
  if (auto ok = AddIdentity(agg, env, shape.value(), std::move(kv.value().second), kv.value().first, r, a); !ok) {
    return ok.error();
  }
  Value& fields = shape.value().fields;  // moved by position (clang's C++20 != rules)
  for (rapidjson::SizeType i = 0; i < fields.MemberCount(); ++i) {
    agg.AddMember((fields.MemberBegin() + i)->name, (fields.MemberBegin() + i)->value, a);
  }
  Result<Value> router = ComponentMetadata(env, "ROUTER_METADATA", false, a);
  if (!router) return router.error();
  if (!router.value().IsNull()) agg.AddMember("router", router.value(), a);
  if (const std::string p2p = Get(env, "KV_P2P_TRANSFER"); !p2p.empty()) agg.AddMember("kv_p2p_transfer", Str(p2p, a), a);
  if (const Value* d = Dataset(aggregate)) agg.AddMember("dataset", Value(*d, a), a);
  Value request = AgenticRequestMetrics(r, aggregate, shape.value().num_gpus, a);
  std::vector<std::string> warnings;
  Result<Value> server = AgenticServerMetrics(server_metrics, Get(env, "FRAMEWORK"), r, log_paths, warnings, a);
  if (!server) return server.error();
  Value pool(server.value()["kv_cache"]["gpu_total_tokens"], a);
  agg.AddMember("request_metrics", request, a);
  agg.AddMember("server_metrics", server.value(), a);
  agg.AddMember("kv_cache_pool_tokens", pool, a);
  if (!warnings.empty()) {
    Value w(rapidjson::kArrayType);
    for (const std::string& s : warnings) w.PushBack(Str(s, a), a);
    agg.AddMember("warnings", w, a);
  }
  return agg;
}

std::string AgenticResultText(rapidjson::Document& agg) {
  PyRoundFloats(agg, 5);
  return PyJsonDumps(agg, 2);
}

namespace {

// The `engine` label values of every series, in numeric order.
std::vector<std::string> Engines(const Value& metrics) {
  std::set<std::string> seen;
  for (const auto& m : metrics.GetObject()) {
    if (!m.value.IsObject() || !m.value.HasMember("series") || !m.value["series"].IsArray()) continue;
    for (const Value& s : m.value["series"].GetArray()) {
      if (!s.IsObject()) continue;
      if (auto e = SeriesLabel(s, "engine")) seen.insert(*e);
    }
  }
  std::vector<std::string> out(seen.begin(), seen.end());
  std::stable_sort(out.begin(), out.end(), [](const std::string& x, const std::string& y) {
    return x.size() != y.size() ? x.size() < y.size() : x < y;  // "2" before "10"
  });
  return out;
}

Value Opt(std::optional<double> v) { return v ? Value(PyRound(*v, 5)) : Value(); }

// Distinct sessions per served_by_rank; empty when no record carries one.
std::map<std::string, std::set<std::string>> SessionsByRank(const AgenticRecords& r, bool& any) {
  std::map<std::string, std::set<std::string>> out;
  any = false;
  for (const Value& rec : r.kept.GetArray()) {
    const Value* rank = RecordMetadata(rec, "served_by_rank");
    if (rank == nullptr || rank->IsNull()) continue;
    any = true;
    const Value* session = RecordMetadata(rec, "x_correlation_id");
    out[PyStr(*rank)].insert(session ? PyStr(*session) : "");
  }
  return out;
}

}  // namespace

Value AgenticIxFields(const std::string& result_dir, const EntryRunInfo& run, const Value& server_metrics,
                      const AgenticRecords& records, Alloc& a) {
  const Value& m = ServerMetricsIndex(server_metrics);
  Value ix = EntryIxFields(result_dir, run, a);
  const std::vector<std::string> hits = {"vllm:prefix_cache_hits"}, queries = {"vllm:prefix_cache_queries"};
  ix.AddMember("prefix_cache_hit_rate", Opt(MetricRate(SumStat(m, hits), SumStat(m, queries))), a);
  bool any_rank = false;
  const auto sessions = SessionsByRank(records, any_rank);
  Value ranks(rapidjson::kArrayType);
  for (const std::string& e : Engines(m)) {
    const SeriesFilter mine = [&e](const Value& s) { return SeriesLabel(s, "engine") == e; };
    Value rank(rapidjson::kObjectType);
    int64_t n = 0;
    rank.AddMember("rank", ParseSigned(e, n) ? Value(n) : Str(e, a), a);
    const std::optional<double> req = m.HasMember("vllm:request_success") ? SumStat(m, {"vllm:request_success"}, mine)
                                                                         : std::nullopt;
    rank.AddMember("requests", req ? Value(static_cast<int64_t>(std::nearbyint(*req))) : Value(), a);
    rank.AddMember("prefix_cache_hit_rate", Opt(MetricRate(SumStat(m, hits, mine), SumStat(m, queries, mine))), a);
    const auto it = sessions.find(e);
    rank.AddMember("sessions", any_rank ? Value(static_cast<int64_t>(it == sessions.end() ? 0 : it->second.size())) : Value(),
                   a);
    ranks.PushBack(rank, a);
  }
  ix.AddMember("dp_ranks", ranks, a);
  return ix;
}

namespace {

bool PowerOn(const EnvLookup& env) {
  const std::string v = Get(env, "ENABLE_AGENTX_POWER", "1");
  const bool on = v == "1" || v == "true" || v == "TRUE" || v == "yes" || v == "YES";
  return on && Get(env, "IS_MULTINODE") != "true";
}

bool RequirePower(const EnvLookup& env) {
  const std::string v = Get(env, "REQUIRE_POWER");
  return v == "1" || v == "true" || v == "TRUE" || v == "yes" || v == "YES";
}

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// The gates after the result is written, in the shell's precedence.
std::string Gate(const std::string& result_dir, const EnvLookup& env, const std::vector<std::string>& power_reasons,
                 bool power_on) {
  const Result<double> threshold = ParseFailedRequestThreshold(Get(env, "AIPERF_FAILED_REQUEST_THRESHOLD", "0.10"));
  if (!threshold) return threshold.error().message;
  const AgenticValidation v = ValidateAgenticResult(result_dir + "/aiperf_artifacts", threshold.value());
  if (!v.valid()) return v.errors.front();
  if (power_on && RequirePower(env) && !power_reasons.empty()) {
    return "AgentX power validation failed: " + Join(power_reasons);
  }
  return ValidateRequiredServerMetrics(result_dir, Get(env, "AIPERF_REQUIRED_SERVER_METRIC_PREFIX"));
}

}  // namespace

Result<AgenticOutcome> WriteAgenticResult(const std::string& dir, const EnvVars& vars, const EntryRunInfo& run,
                                          int expected_gpus) {
  const EnvLookup env = [&](const std::string& n) -> std::optional<std::string> {
    for (const auto& [k, v] : vars) {
      if (k == n) return v;
    }
    return std::nullopt;
  };
  const std::string name = Get(env, "RESULT_FILENAME");
  if (name.empty()) return Error{"RESULT_FILENAME env var not set"};
  const std::string result_dir = Get(env, "RESULT_DIR").empty() ? dir : Get(env, "RESULT_DIR");
  const std::string out_dir = Get(env, "AGENTIC_OUTPUT_DIR").empty() ? dir : Get(env, "AGENTIC_OUTPUT_DIR");
  const std::string artifacts = ResolveAgenticArtifactDir(result_dir);
  const std::string jsonl = artifacts + "/profile_export.jsonl";
  std::error_code ec;
  if (!fs::exists(jsonl, ec)) return Error{"the client wrote no AIPerf artifacts: " + jsonl + " not found"};
  AgenticOutcome outcome;
  Result<AgenticRecords> records = LoadAgenticRecords(jsonl);
  Result<rapidjson::Document> aggregate = ReadOptionalJson(artifacts + "/profile_export_aiperf.json");
  Result<rapidjson::Document> server = ReadOptionalJson(artifacts + "/server_metrics_export.json");
  for (const Error* e : {records ? nullptr : &records.error(), aggregate ? nullptr : &aggregate.error(),
                         server ? nullptr : &server.error()}) {
    if (e != nullptr) return outcome.failure = e->message, outcome;
  }
  Result<rapidjson::Document> agg =
      BuildAgenticAgg(records.value(), aggregate.value(), server.value(), env, FindServerLogPaths(result_dir));
  if (!agg) return outcome.failure = agg.error().message, outcome;
  rapidjson::Document& doc = agg.value();
  PyRoundFloats(doc, 5);
  const bool power_on = PowerOn(env);
  const std::vector<std::string> power = power_on ? ApplyAgenticPower(result_dir, doc, expected_gpus)
                                                  : std::vector<std::string>{};
  doc.AddMember("ix", AgenticIxFields(result_dir, run, server.value(), records.value(), doc.GetAllocator()),
                doc.GetAllocator());
  fs::create_directories(out_dir, ec);
  outcome.result_path = out_dir + "/" + name + ".json";
  if (Status s = WriteFileAtomic(outcome.result_path, PyJsonDumps(doc)); !s) return s.error();
  outcome.failure = Gate(result_dir, env, power, power_on);
  return outcome;
}

}  // namespace ix
