#include "submitter/results/process_result.h"

#include <cmath>
#include <cstdlib>
#include <utility>
#include <vector>

#include "core/base/text.h"

namespace ix {
namespace {

// Python's int(s) of an environment value.
std::optional<int64_t> PyInt(const std::string& s) {
  const std::string t(Trim(s));
  if (t.empty()) return std::nullopt;
  char* end = nullptr;
  const long long v = std::strtoll(t.c_str(), &end, 10);
  if (*end != '\0') return std::nullopt;
  return v;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// float(value) of a client result field (a JSON number, or a string Python
// would convert).
std::optional<double> PyFloat(const rapidjson::Value& v) {
  if (v.IsNumber()) return v.GetDouble();
  if (v.IsString()) {
    char* end = nullptr;
    const double d = std::strtod(v.GetString(), &end);
    if (end != v.GetString() && *end == '\0') return d;
  }
  return std::nullopt;
}

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
  return s;
}

struct Builder {
  rapidjson::Document d;
  Builder() { d.SetObject(); }
  void Set(const std::string& k, rapidjson::Value v) {
    auto& a = d.GetAllocator();
    if (d.HasMember(k.c_str())) d[k.c_str()] = v;  // a dict assignment keeps the key's place
    else d.AddMember(rapidjson::Value(k.c_str(), a), v, a);
  }
  void Str(const std::string& k, const std::string& v) { Set(k, rapidjson::Value(v.c_str(), d.GetAllocator())); }
  void Int(const std::string& k, int64_t v) { Set(k, rapidjson::Value(v)); }
  void Num(const std::string& k, double v) { Set(k, rapidjson::Value(v)); }
  void Bool(const std::string& k, bool v) { Set(k, rapidjson::Value(v)); }
};

Result<std::string> Required(const EnvLookup& env, const std::vector<std::string>& names,
                             std::vector<std::string>& values) {
  std::string missing;
  for (const std::string& n : names) {
    std::optional<std::string> v = env(n);
    if (!v) missing += (missing.empty() ? "" : ", ") + n;
    values.push_back(v.value_or(""));
  }
  if (!missing.empty()) return Error{"Missing required environment variables: " + missing};
  return std::string();
}

Result<int64_t> IntVar(const std::string& name, const std::string& v) {
  std::optional<int64_t> n = PyInt(v);
  if (!n) return Error{name + "='" + v + "' is not an integer"};
  return *n;
}

// ROUTER_METADATA: exactly {"name": ..., "version": ...}, both non-empty
// strings (get_optional_component_metadata); unset/empty/"null": none.
Result<std::optional<rapidjson::Document>> RouterMetadata(const EnvLookup& env) {
  const std::optional<std::string> raw = env("ROUTER_METADATA");
  if (!raw || raw->empty() || *raw == "null") return std::optional<rapidjson::Document>();
  rapidjson::Document m;
  m.Parse(raw->c_str());
  if (m.HasParseError()) return Error{"ROUTER_METADATA must contain valid JSON"};
  if (!m.IsObject() || m.MemberCount() != 2 || !m.HasMember("name") || !m.HasMember("version")) {
    return Error{"ROUTER_METADATA must contain exactly 'name' and 'version'"};
  }
  for (const auto& f : std::as_const(m).GetObject()) {
    if (!f.value.IsString() || f.value.GetStringLength() == 0) {
      return Error{"ROUTER_METADATA name and version must be non-empty strings"};
    }
  }
  return std::optional<rapidjson::Document>(std::move(m));
}

// float(bmk_result['total_token_throughput']), float(...['output_throughput']).
Result<std::pair<double, double>> Throughputs(const rapidjson::Value& bench) {
  const char* keys[] = {"total_token_throughput", "output_throughput"};
  double t[2];
  for (int i = 0; i < 2; ++i) {
    std::optional<double> x = bench.HasMember(keys[i]) ? PyFloat(bench[keys[i]]) : std::nullopt;
    if (!x) return Error{std::string("the client's result has no number ") + keys[i]};
    t[i] = *x;
  }
  return std::make_pair(t[0], t[1]);
}

// process_result.py's single-node branch: the topology from TP, EP_SIZE,
// DP_ATTENTION (and PP/DCP/PCP, default 1), throughputs over TP x PP x PCP.
Status SingleNodeFields(Builder& b, const rapidjson::Value& bench, const EnvLookup& env, bool disagg) {
  if (disagg) return Error{"Disaggregated mode requires multinode setup."};
  std::vector<std::string> s;
  if (auto r = Required(env, {"TP", "EP_SIZE", "DP_ATTENTION"}, s); !r) return r.error();
  Result<int64_t> tp = IntVar("TP", s[0]), ep = IntVar("EP_SIZE", s[1]);
  Result<int64_t> pp = IntVar("PP_SIZE", env("PP_SIZE").value_or("1"));
  Result<int64_t> dcp = IntVar("DCP_SIZE", env("DCP_SIZE").value_or("1"));
  Result<int64_t> pcp = IntVar("PCP_SIZE", env("PCP_SIZE").value_or("1"));
  for (const Result<int64_t>* r : {&tp, &ep, &pp, &dcp, &pcp}) {
    if (!*r) return r->error();
  }
  if (pp.value() <= 0 || dcp.value() <= 0 || pcp.value() <= 0) {
    return Error{"PP_SIZE, DCP_SIZE, and PCP_SIZE must be positive integers."};
  }
  const int64_t gpus = tp.value() * pp.value() * pcp.value();
  if (gpus == 0) return Error{"TP x PP_SIZE x PCP_SIZE is 0"};
  Result<std::pair<double, double>> t = Throughputs(bench);
  if (!t) return t.error();
  const auto [total, output] = t.value();
  b.Bool("is_multinode", false);
  b.Int("tp", tp.value());
  b.Int("pp", pp.value());
  b.Int("dcp_size", dcp.value());
  b.Int("pcp_size", pcp.value());
  b.Int("ep", ep.value());
  b.Str("dp_attention", s[2]);
  const double n = static_cast<double>(gpus);
  b.Num("tput_per_gpu", total / n);
  b.Num("output_tput_per_gpu", output / n);
  b.Num("input_tput_per_gpu", (total - output) / n);
  return Ok{};
}

// The integers of the multinode branch, read in process_result.py's order
// (so the first bad one is the one it names); `m` is the required
// variables' values in its multinode_vars order.
struct MultinodeInts {
  int64_t prefill_gpus, decode_gpus, prefill_workers, prefill_tp, prefill_pp, prefill_dcp, prefill_pcp, prefill_ep;
  int64_t decode_workers, decode_tp, decode_pp, decode_dcp, decode_pcp, decode_ep;
};

Result<MultinodeInts> ReadMultinodeInts(const EnvLookup& env, const std::vector<std::string>& m) {
  auto opt = [&](const char* n) { return env(n).value_or("1"); };
  const std::pair<const char*, std::string> vars[] = {
      {"PREFILL_GPUS", m[0]},          {"DECODE_GPUS", m[1]},
      {"PREFILL_NUM_WORKERS", m[2]},   {"PREFILL_TP", m[3]},
      {"PREFILL_PP_SIZE", opt("PREFILL_PP_SIZE")}, {"PREFILL_DCP_SIZE", opt("PREFILL_DCP_SIZE")},
      {"PREFILL_PCP_SIZE", opt("PREFILL_PCP_SIZE")}, {"PREFILL_EP", m[4]},
      {"DECODE_NUM_WORKERS", m[6]},    {"DECODE_TP", m[7]},
      {"DECODE_PP_SIZE", opt("DECODE_PP_SIZE")}, {"DECODE_DCP_SIZE", opt("DECODE_DCP_SIZE")},
      {"DECODE_PCP_SIZE", opt("DECODE_PCP_SIZE")}, {"DECODE_EP", m[8]}};
  int64_t n[14];
  for (size_t i = 0; i < 14; ++i) {
    Result<int64_t> r = IntVar(vars[i].first, vars[i].second);
    if (!r) return r.error();
    n[i] = r.value();
  }
  return MultinodeInts{n[0], n[1], n[2], n[3], n[4], n[5], n[6], n[7], n[8], n[9], n[10], n[11], n[12], n[13]};
}

// process_result.py's multinode branch: both workers' topology, throughput
// over all GPUs (total), the decode GPUs (output; all when there are none,
// an aggregated run) and the prefill GPUs (input); a decode worker without
// GPUs reports tp/ep 0 and pp/dcp/pcp 1.
Status MultinodeFields(Builder& b, const rapidjson::Value& bench, const EnvLookup& env) {
  std::vector<std::string> m;
  if (auto r = Required(env, {"PREFILL_GPUS", "DECODE_GPUS", "PREFILL_NUM_WORKERS", "PREFILL_TP", "PREFILL_EP",
                              "PREFILL_DP_ATTN", "DECODE_NUM_WORKERS", "DECODE_TP", "DECODE_EP", "DECODE_DP_ATTN"},
                       m);
      !r) {
    return r.error();
  }
  const std::string prefill_hw = env("PREFILL_HARDWARE").value_or(""), decode_hw = env("DECODE_HARDWARE").value_or("");
  if (prefill_hw.empty() != decode_hw.empty()) {
    return Error{"PREFILL_HARDWARE and DECODE_HARDWARE must be specified together."};
  }
  Result<MultinodeInts> ints = ReadMultinodeInts(env, m);
  if (!ints) return ints.error();
  const MultinodeInts& n = ints.value();
  for (int64_t v : {n.prefill_pp, n.prefill_dcp, n.prefill_pcp, n.decode_pp, n.decode_dcp, n.decode_pcp}) {
    if (v <= 0) return Error{"Multinode PP, DCP, and PCP sizes must be positive integers."};
  }
  const int64_t total_gpus = n.prefill_gpus + n.decode_gpus;
  if (total_gpus <= 0) return Error{"Multinode results require at least one GPU."};
  if (n.prefill_gpus <= 0) return Error{"Multinode results require at least one prefill GPU."};
  Result<std::pair<double, double>> t = Throughputs(bench);
  if (!t) return t.error();
  const auto [total, output] = t.value();
  const bool decode = n.decode_gpus > 0;
  b.Bool("is_multinode", true);
  b.Int("prefill_tp", n.prefill_tp);
  b.Int("prefill_pp", n.prefill_pp);
  b.Int("prefill_dcp_size", n.prefill_dcp);
  b.Int("prefill_pcp_size", n.prefill_pcp);
  b.Int("prefill_ep", n.prefill_ep);
  b.Str("prefill_dp_attention", m[5]);
  b.Int("prefill_num_workers", n.prefill_workers);
  b.Int("decode_tp", decode ? n.decode_tp : 0);
  b.Int("decode_pp", decode ? n.decode_pp : 1);
  b.Int("decode_dcp_size", decode ? n.decode_dcp : 1);
  b.Int("decode_pcp_size", decode ? n.decode_pcp : 1);
  b.Int("decode_ep", decode ? n.decode_ep : 0);
  b.Str("decode_dp_attention", m[9]);
  b.Int("decode_num_workers", n.decode_workers);
  b.Int("num_prefill_gpu", n.prefill_gpus);
  b.Int("num_decode_gpu", n.decode_gpus);
  b.Num("tput_per_gpu", total / static_cast<double>(total_gpus));
  b.Num("output_tput_per_gpu", output / static_cast<double>(decode ? n.decode_gpus : total_gpus));
  b.Num("input_tput_per_gpu", (total - output) / static_cast<double>(n.prefill_gpus));
  if (!prefill_hw.empty()) {
    b.Str("prefill_hw", prefill_hw);
    b.Str("decode_hw", decode_hw);
  }
  return Ok{};
}

// Every *_ms metric again in seconds, and 1000 / TPOT as *_intvty.
Status LatencyFields(Builder& b, const rapidjson::Value& bench) {
  for (const auto& m : bench.GetObject()) {
    const std::string key(m.name.GetString(), m.name.GetStringLength());
    const bool ms = key.size() >= 2 && key.compare(key.size() - 2, 2, "ms") == 0;
    const bool tpot = key.find("tpot") != std::string::npos;
    if (!ms && !tpot) continue;
    const std::optional<double> x = PyFloat(m.value);
    if (!x) return Error{"the client's result field " + key + " is not a number"};
    if (ms) b.Num(Replace(key, "_ms", ""), *x / 1000.0);
    if (tpot) {
      if (*x == 0) return Error{"the client's result has " + key + " = 0: process_result.py divides by it"};
      b.Num(Replace(Replace(key, "_ms", ""), "tpot", "intvty"), 1000.0 / *x);
    }
  }
  return Ok{};
}

}  // namespace

bool IsMultinode(const EnvLookup& env) { return Lower(env("IS_MULTINODE").value_or("false")) == "true"; }

int ExpectedGpus(const EnvLookup& env) {
  auto get = [&](const char* n, int64_t fallback) {
    std::optional<std::string> v = env(n);
    return v ? PyInt(*v).value_or(0) : fallback;
  };
  return static_cast<int>(get("TP", 0) * get("PP_SIZE", 1) * get("PCP_SIZE", 1));
}

Result<rapidjson::Document> ProcessResult(const rapidjson::Value& bench, const EnvLookup& env) {
  std::vector<std::string> v;
  if (auto r = Required(env, {"RUNNER_TYPE", "FRAMEWORK", "PRECISION", "SPEC_DECODING", "RESULT_FILENAME", "ISL",
                              "OSL", "DISAGG", "MODEL_PREFIX", "IMAGE"}, v);
      !r) {
    return r.error();
  }
  if (!bench.IsObject() || !bench.HasMember("max_concurrency") || !bench.HasMember("model_id")) {
    return Error{"the client's result has no max_concurrency or model_id"};
  }
  const std::optional<double> conc = PyFloat(bench["max_concurrency"]);
  Result<int64_t> isl = IntVar("ISL", v[5]), osl = IntVar("OSL", v[6]);
  if (!conc || !isl || !osl) return Error{!conc ? "max_concurrency is not a number" : (!isl ? isl : osl).error().message};
  Builder b;
  b.Str("hw", v[0]);
  b.Int("conc", static_cast<int64_t>(*conc));
  b.Str("image", v[9]);
  b.Set("model", rapidjson::Value(bench["model_id"], b.d.GetAllocator()));
  b.Str("infmax_model_prefix", v[8]);
  b.Str("framework", v[1]);
  b.Str("precision", v[2]);
  b.Str("spec_decoding", v[3]);
  const bool disagg = Lower(v[7]) == "true";
  b.Bool("disagg", disagg);
  b.Str("recipe_fingerprint", env("RECIPE_FINGERPRINT").value_or(""));
  b.Int("isl", isl.value());
  b.Int("osl", osl.value());
  Result<std::optional<rapidjson::Document>> router = RouterMetadata(env);
  if (!router) return router.error();
  if (router.value()) b.Set("router", rapidjson::Value(*router.value(), b.d.GetAllocator()));
  if (std::optional<std::string> kv = env("KV_P2P_TRANSFER"); kv && !kv->empty()) b.Str("kv_p2p_transfer", *kv);
  Status topology = IsMultinode(env) ? MultinodeFields(b, bench, env) : SingleNodeFields(b, bench, env, disagg);
  if (!topology) return topology.error();
  if (Status s = LatencyFields(b, bench); !s) return s.error();
  return std::move(b.d);
}

}  // namespace ix
