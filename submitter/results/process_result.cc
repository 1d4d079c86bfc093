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

}  // namespace

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
  if (Lower(env("IS_MULTINODE").value_or("false")) == "true") {
    return Error{"IS_MULTINODE=true: multinode results are not made here (process_result.py's multinode branch)"};
  }
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
  const char* throughputs[] = {"total_token_throughput", "output_throughput"};
  double t[2];
  for (int i = 0; i < 2; ++i) {
    std::optional<double> x = bench.HasMember(throughputs[i]) ? PyFloat(bench[throughputs[i]]) : std::nullopt;
    if (!x) return Error{std::string("the client's result has no number ") + throughputs[i]};
    t[i] = *x;
  }
  b.Bool("is_multinode", false);
  b.Int("tp", tp.value());
  b.Int("pp", pp.value());
  b.Int("dcp_size", dcp.value());
  b.Int("pcp_size", pcp.value());
  b.Int("ep", ep.value());
  b.Str("dp_attention", s[2]);
  const double n = static_cast<double>(gpus);
  b.Num("tput_per_gpu", t[0] / n);
  b.Num("output_tput_per_gpu", t[1] / n);
  b.Num("input_tput_per_gpu", (t[0] - t[1]) / n);
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
  return std::move(b.d);
}

}  // namespace ix
