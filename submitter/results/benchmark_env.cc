#include "submitter/results/benchmark_env.h"

#include <rapidjson/document.h>
#include <rapidjson/writer.h>

#include <cstdlib>
#include <optional>

namespace ix {
namespace {

// A field of the matrix entry as the workflow's ${{ }} renders it into an
// environment value; nullopt when absent.
std::optional<std::string> Field(const rapidjson::Value& o, const char* key) {
  if (!o.HasMember(key)) return std::nullopt;
  const rapidjson::Value& v = o[key];
  if (v.IsString()) return std::string(v.GetString(), v.GetStringLength());
  if (v.IsBool()) return std::string(v.GetBool() ? "true" : "false");
  if (v.IsInt64()) return std::to_string(v.GetInt64());
  if (v.IsNull()) return std::string();
  rapidjson::StringBuffer buf;  // an object (router metadata): as JSON
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  v.Accept(w);
  return std::string(buf.GetString(), buf.GetSize());
}

std::string Quote(const std::string& v) {
  std::string out = "'";
  for (char c : v) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

std::string EnvValue(const EnvVars& env, const std::string& name) {
  for (const auto& [n, v] : env) {
    if (n == name) return v;
  }
  return "";
}

Result<EnvVars> BenchmarkEnvironment(const PlannedEntry& e, const std::string& runner_name) {
  rapidjson::Document d;
  d.Parse(e.entry_json.c_str());
  if (d.HasParseError() || !d.IsObject()) return Error{"entry " + std::to_string(e.index) + ": no matrix entry in sweep.json"};
  EnvVars env;
  std::string missing;
  auto need = [&](const char* key) {
    std::optional<std::string> v = Field(d, key);
    if (!v) missing += (missing.empty() ? "" : ", ") + std::string(key);
    return v.value_or("");
  };
  auto put = [&](const char* name, const std::string& v) { env.emplace_back(name, v); };
  const bool agentic = Field(d, "scenario-type").value_or("") == "agentic-coding";
  put("RUNNER_TYPE", need("runner"));
  put("RUNNER_NAME", runner_name);
  put("EXP_NAME", need("exp-name"));
  put("MODEL", need("model"));
  put("MODEL_PREFIX", need("model-prefix"));
  put("IMAGE", need("image"));
  put("FRAMEWORK", need("framework"));
  put("PRECISION", need("precision"));
  if (!agentic) {
    put("ISL", need("isl"));
    put("OSL", need("osl"));
    put("MAX_MODEL_LEN", need("max-model-len"));
    put("RANDOM_RANGE_RATIO", "0.8");  // the workflow's fixed value
  }
  put("TP", need("tp"));
  put("PP_SIZE", Field(d, "pp").value_or("1"));
  put("DCP_SIZE", Field(d, "dcp-size").value_or("1"));
  put("PCP_SIZE", Field(d, "pcp-size").value_or("1"));
  put("EP_SIZE", need("ep"));
  put("DP_ATTENTION", need("dp-attn"));
  put("CONC", need("conc"));
  put("SPEC_DECODING", need("spec-decoding"));
  put("DISAGG", Field(d, "disagg").value_or("false"));
  put("IS_MULTINODE", e.nodes > 1 ? "true" : "false");  // a step across nodes (InferenceX: multinode)
  put("RUN_EVAL", Field(d, "run-eval").value_or("false"));
  put("EVAL_ONLY", e.eval_only ? "true" : "false");
  put("SCENARIO_TYPE", agentic ? "agentic-coding" : "fixed-seq-len");
  if (agentic) {
    put("KV_OFFLOADING", Field(d, "kv-offloading").value_or(""));
    put("TOTAL_CPU_DRAM_GB", Field(d, "total-cpu-dram-gb").value_or("0"));
    put("DURATION", Field(d, "duration").value_or("3600"));
  }
  const std::string fingerprint = Field(d, "recipe-fingerprint").value_or("");
  put("RECIPE_FINGERPRINT", fingerprint);
  // The row's own router metadata wins; else the recipe's router, for arms
  // that run one (DEP).
  std::string router = Field(d, "router").value_or("");
  if (router.empty() && !e.router_version.empty()) {
    router = R"({"name":"vllm-router","version":")" + e.router_version + "\"}";
  }
  if (!router.empty()) put("ROUTER_METADATA", router);
  if (std::optional<std::string> p2p = Field(d, "kv-p2p-transfer")) put("KV_P2P_TRANSFER", *p2p);
  if (!missing.empty()) {
    return Error{"entry " + std::to_string(e.index) + " (" + e.config_key + "): the matrix entry has no " + missing};
  }
  auto v = [&](const char* n) { return EnvValue(env, n); };
  std::string name = v("EXP_NAME") + "_" + v("PRECISION") + "_" + v("FRAMEWORK") + "_tp" + v("TP") + "-pp" +
                     v("PP_SIZE") + "-dcp" + v("DCP_SIZE") + "-pcp" + v("PCP_SIZE") + "-ep" + v("EP_SIZE") + "-dpa" +
                     v("DP_ATTENTION") + "_disagg-" + v("DISAGG") + "_spec-" + v("SPEC_DECODING") + "_conc" +
                     v("CONC") + "_" + runner_name;
  if (!fingerprint.empty()) name += "_recipe-" + fingerprint.substr(0, 16);
  put("RESULT_FILENAME", name);
  if (name.find('/') != std::string::npos || runner_name.empty()) {
    return Error{"entry " + std::to_string(e.index) + ": RESULT_FILENAME '" + name +
                 "' is not a file name (exp-name and the node name must not contain '/')"};
  }
  auto num = [&](const char* n) { return std::strtoll(v(n).c_str(), nullptr, 10); };
  put("GPU_COUNT", std::to_string(num("TP") * num("PP_SIZE") * num("PCP_SIZE")));
  return env;
}

bool HasAggResult(const EnvVars& env) {
  return EnvValue(env, "EVAL_ONLY") != "true" && EnvValue(env, "SCENARIO_TYPE") == "fixed-seq-len";
}

std::string EnvFileText(const EnvVars& env) {
  std::string out;
  for (const auto& [n, v] : env) out += n + "=" + Quote(v) + "\n";
  return out;
}

}  // namespace ix
