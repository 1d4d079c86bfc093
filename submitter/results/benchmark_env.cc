#include "submitter/results/benchmark_env.h"

#include <rapidjson/document.h>
#include <rapidjson/writer.h>

#include <cstdlib>
#include <optional>

#include "submitter/results/python_json.h"

namespace ix {

std::string EnvValue(const EnvVars& env, const std::string& name) {
  for (const auto& [n, v] : env) {
    if (n == name) return v;
  }
  return "";
}

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

// The matrix entry's fields, read the way the workflow renders them; the
// names of the missing required ones are collected for one error.
struct EntryFields {
  const rapidjson::Value& d;
  std::string missing;
  std::string Need(const rapidjson::Value& o, const char* key, const char* prefix = "") {
    std::optional<std::string> v = Field(o, key);
    if (!v) missing += (missing.empty() ? "" : ", ") + std::string(prefix) + key;
    return v.value_or("");
  }
  std::string Need(const char* key) { return Need(d, key); }
  std::string Get(const char* key, const char* fallback) const { return Field(d, key).value_or(fallback); }
};

// PREFILL_* or DECODE_* (`role`) from the entry's `prefill:`/`decode:`
// object, as the multinode workflow's env block sets them (pp, dcp-size,
// pcp-size default to 1 like its inputs).
void PutWorker(EnvVars& env, EntryFields& f, const char* role, const char* key) {
  static const rapidjson::Value kEmpty(rapidjson::kObjectType);
  const bool has = f.d.HasMember(key) && f.d[key].IsObject();
  if (!has) f.missing += (f.missing.empty() ? "" : ", ") + std::string(key);
  const rapidjson::Value& w = has ? f.d[key] : kEmpty;
  const std::string p = std::string(key) + ".";
  const std::string r = role;
  env.emplace_back(r + "_NUM_WORKERS", has ? f.Need(w, "num-worker", p.c_str()) : "");
  env.emplace_back(r + "_TP", has ? f.Need(w, "tp", p.c_str()) : "");
  env.emplace_back(r + "_PP_SIZE", Field(w, "pp").value_or("1"));
  env.emplace_back(r + "_DCP_SIZE", Field(w, "dcp-size").value_or("1"));
  env.emplace_back(r + "_PCP_SIZE", Field(w, "pcp-size").value_or("1"));
  env.emplace_back(r + "_EP", has ? f.Need(w, "ep", p.c_str()) : "");
  env.emplace_back(r + "_DP_ATTN", has ? f.Need(w, "dp-attn", p.c_str()) : "");
}

// The row's conc list as the workflow's join(fromJson(conc-list), 'x')
// writes it into the run's name ("32x64"); a single number as itself.
std::string ConcListName(const rapidjson::Value& d) {
  if (!d.HasMember("conc") || !d["conc"].IsArray()) return Field(d, "conc").value_or("");
  std::string out;
  for (const auto& c : d["conc"].GetArray()) {
    out += (out.empty() ? "" : "x") + (c.IsInt64() ? std::to_string(c.GetInt64()) : std::string("?"));
  }
  return out;
}

std::string FileNameError(const PlannedEntry& e, const std::string& name, const std::string& runner_name) {
  if (name.find('/') == std::string::npos && !runner_name.empty()) return "";
  return "entry " + std::to_string(e.index) + ": RESULT_FILENAME '" + name +
         "' is not a file name (exp-name and the node name must not contain '/')";
}

// The single-node part: TP ... DP_ATTENTION (benchmark-tmpl.yml).
void PutSingleNodeTopology(EnvVars& env, EntryFields& f) {
  env.emplace_back("TP", f.Need("tp"));
  env.emplace_back("PP_SIZE", f.Get("pp", "1"));
  env.emplace_back("DCP_SIZE", f.Get("dcp-size", "1"));
  env.emplace_back("PCP_SIZE", f.Get("pcp-size", "1"));
  env.emplace_back("EP_SIZE", f.Need("ep"));
  env.emplace_back("DP_ATTENTION", f.Need("dp-attn"));
}

// The multinode part (benchmark-multinode-tmpl.yml, aggregated rows): the
// worker's shape under PREFILL_*, the row's decode block under DECODE_*,
// and the GPU split its "Process result" step gives process_result.py for a
// result without _ctx_/_gen_: every GPU of the run a prefill GPU, none
// decode. The run's GPUs are the arm's (per node x nodes), what srt-slurm
// counts as TOTAL_GPUS in the result's name.
void PutMultinodeTopology(EnvVars& env, EntryFields& f, const PlannedEntry& e) {
  PutWorker(env, f, "PREFILL", "prefill");
  PutWorker(env, f, "DECODE", "decode");
  env.emplace_back("PREFILL_GPUS", std::to_string(e.gpus * e.nodes));
  env.emplace_back("DECODE_GPUS", "0");
  auto hw = [&](const char* key) {
    return f.d.HasMember(key) && f.d[key].IsObject() ? Field(f.d[key], "hardware").value_or("") : "";
  };
  env.emplace_back("PREFILL_HARDWARE", hw("prefill"));
  env.emplace_back("DECODE_HARDWARE", hw("decode"));
}

// RESULT_FILENAME of a single-node run (benchmark-tmpl.yml).
std::string SingleNodeName(const EnvVars& env) {
  auto v = [&](const char* n) { return EnvValue(env, n); };
  return v("EXP_NAME") + "_" + v("PRECISION") + "_" + v("FRAMEWORK") + "_tp" + v("TP") + "-pp" + v("PP_SIZE") +
         "-dcp" + v("DCP_SIZE") + "-pcp" + v("PCP_SIZE") + "-ep" + v("EP_SIZE") + "-dpa" + v("DP_ATTENTION") +
         "_disagg-" + v("DISAGG") + "_spec-" + v("SPEC_DECODING") + "_conc" + v("CONC") + "_" + v("RUNNER_NAME");
}

// RESULT_FILENAME_BASE of a multinode run (benchmark-multinode-tmpl.yml:
// both workers' shapes, the row's whole conc list).
std::string MultinodeBaseName(const EnvVars& env, const std::string& conc_list) {
  auto v = [&](const char* n) { return EnvValue(env, n); };
  auto worker = [&](const std::string& r) {
    auto w = [&](const char* n) { return EnvValue(env, r + n); };
    return "-tp" + w("_TP") + "-pp" + w("_PP_SIZE") + "-dcp" + w("_DCP_SIZE") + "-pcp" + w("_PCP_SIZE") + "-ep" +
           w("_EP") + "-dp" + w("_DP_ATTN") + "-nw" + w("_NUM_WORKERS");
  };
  return v("EXP_NAME") + "_" + v("PRECISION") + "_" + v("FRAMEWORK") + "_prefill" + worker("PREFILL") + "_decode" +
         worker("DECODE") + "_disagg-" + v("DISAGG") + "_spec-" + v("SPEC_DECODING") + "_conc" + conc_list + "_" +
         v("RUNNER_NAME");
}

// What the launcher appends per concurrency to a multinode run's name: the
// srt-slurm launchers (runners/launch_b300-nv.sh, ...) copy sa-bench's
// LOGS/sa-bench_isl_I_osl_O/results_concurrency_C_gpus_G.json to
// ${RESULT_FILENAME}_${CONFIG_NAME}_conc${C}_gpus_${G}.json; agentic runs
// (benchmarks/multi_node/agentic_srt.sh) write ${RESULT_FILENAME}_conc${C}.
std::string MultinodeSuffix(const EnvVars& env, bool agentic) {
  auto v = [&](const char* n) { return EnvValue(env, n); };
  if (agentic) return "_conc" + v("CONC");
  return "_sa-bench_isl_" + v("ISL") + "_osl_" + v("OSL") + "_conc" + v("CONC") + "_gpus_" + v("PREFILL_GPUS");
}

// The agentic part: benchmark-tmpl.yml's agentic inputs (the backend's
// name and its metadata as toJson writes it: indented by 2), the AIPerf
// settings benchmark_lib.sh gives every replay (the workflow's failure
// threshold, the live one and the idle-gap cap at their defaults, the
// exports of build_replay_cmd), and where the artifacts and the aggregate go.
void PutAgentic(EnvVars& env, EntryFields& f, const ContractOptions& o) {
  auto put = [&](const char* name, const std::string& v) { env.emplace_back(name, v); };
  put("KV_OFFLOADING", f.Need("kv-offloading"));
  const bool has_backend = f.d.HasMember("kv-offload-backend") && f.d["kv-offload-backend"].IsObject();
  put("KV_OFFLOAD_BACKEND", has_backend ? Field(f.d["kv-offload-backend"], "name").value_or("") : "");
  put("KV_OFFLOAD_BACKEND_METADATA", has_backend ? PyJsonDumps(f.d["kv-offload-backend"], 2) : "");
  put("TOTAL_CPU_DRAM_GB", f.Get("total-cpu-dram-gb", "0"));
  put("DURATION", o.duration > 0 ? std::to_string(o.duration) : f.Get("duration", "3600"));
  put("AIPERF_FAILED_REQUEST_THRESHOLD", "0.10");
  put("AIPERF_LIVE_FAILED_REQUEST_THRESHOLD", "0.10");
  put("AIPERF_TRACE_IDLE_GAP_CAP_SECONDS", "300");
  put("AIPERF_DATASET_WEKA_LIVE_ASSISTANT_RESPONSES", "0");
  put("AIPERF_DATASET_CONFIGURATION_TIMEOUT", "1800");
  put("AIPERF_SERVICE_PROFILE_CONFIGURE_TIMEOUT", "1800");
  put("AIPERF_UI_REALTIME_METRICS_ENABLED", "true");
  if (!o.result_dir.empty()) {
    put("RESULT_DIR", o.result_dir);
    put("AGENTIC_OUTPUT_DIR", o.result_dir);
  }
}

}  // namespace

Result<EnvVars> BenchmarkEnvironment(const PlannedEntry& e, const std::string& runner_name,
                                     const ContractOptions& options) {
  rapidjson::Document d;
  d.Parse(e.entry_json.c_str());
  if (d.HasParseError() || !d.IsObject()) return Error{"entry " + std::to_string(e.index) + ": no matrix entry in sweep.json"};
  const bool multinode = e.nodes > 1;  // a step across nodes (InferenceX: multinode)
  if (multinode && Field(d, "disagg").value_or("false") == "true") {
    return Error{"entry " + std::to_string(e.index) + " (" + e.config_key +
                 "): a disaggregated multinode entry (disagg: true) has no environment here: only aggregated ones run"};
  }
  EnvVars env;
  EntryFields f{d, ""};
  auto put = [&](const char* name, const std::string& v) { env.emplace_back(name, v); };
  const bool agentic = f.Get("scenario-type", "") == "agentic-coding";
  put("RUNNER_TYPE", f.Need("runner"));
  put("RUNNER_NAME", runner_name);
  put("EXP_NAME", f.Need("exp-name"));
  put("MODEL", f.Need("model"));
  put("MODEL_PREFIX", f.Need("model-prefix"));
  put("IMAGE", f.Need("image"));
  put("FRAMEWORK", f.Need("framework"));
  put("PRECISION", f.Need("precision"));
  if (!agentic) {
    put("ISL", f.Need("isl"));
    put("OSL", f.Need("osl"));
    put("MAX_MODEL_LEN", f.Need("max-model-len"));
    put("RANDOM_RANGE_RATIO", "0.8");  // the workflow's fixed value
  }
  if (multinode) PutMultinodeTopology(env, f, e);
  else PutSingleNodeTopology(env, f);
  // A multinode row has a conc list; the task runs one of them (e.conc).
  put("CONC", multinode ? std::to_string(e.conc) : f.Need("conc"));
  put("SPEC_DECODING", f.Need("spec-decoding"));
  put("DISAGG", f.Get("disagg", "false"));
  put("IS_MULTINODE", multinode ? "true" : "false");
  put("RUN_EVAL", f.Get("run-eval", "false"));
  put("EVAL_ONLY", e.eval_only ? "true" : "false");
  put("SCENARIO_TYPE", agentic ? "agentic-coding" : "fixed-seq-len");
  if (agentic) PutAgentic(env, f, options);
  const std::string fingerprint = f.Get("recipe-fingerprint", "");
  put("RECIPE_FINGERPRINT", fingerprint);
  // The row's own router metadata wins; else the recipe's router, for arms
  // that run one (DEP).
  std::string router = f.Get("router", "");
  if (router.empty() && !e.router_version.empty()) {
    router = R"({"name":"vllm-router","version":")" + e.router_version + "\"}";
  }
  if (!router.empty()) put("ROUTER_METADATA", router);
  if (std::optional<std::string> p2p = Field(d, "kv-p2p-transfer")) put("KV_P2P_TRANSFER", *p2p);
  if (multinode && e.gpus * e.nodes <= 0) f.missing += (f.missing.empty() ? "" : ", ") + std::string("the arm's GPUs");
  if (!f.missing.empty()) {
    return Error{"entry " + std::to_string(e.index) + " (" + e.config_key + "): the matrix entry has no " + f.missing};
  }
  std::string name = multinode ? MultinodeBaseName(env, ConcListName(d)) : SingleNodeName(env);
  if (!fingerprint.empty()) name += "_recipe-" + fingerprint.substr(0, 16);
  if (multinode) name += MultinodeSuffix(env, agentic);
  put("RESULT_FILENAME", name);
  if (std::string err = FileNameError(e, name, runner_name); !err.empty()) return Error{err};
  if (!multinode) {
    auto num = [&](const char* n) { return std::strtoll(EnvValue(env, n).c_str(), nullptr, 10); };
    put("GPU_COUNT", std::to_string(num("TP") * num("PP_SIZE") * num("PCP_SIZE")));
  }
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
