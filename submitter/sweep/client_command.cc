#include "submitter/sweep/client_command.h"

#include <cstdlib>
#include <sstream>

namespace ix {
namespace {

ClientWord Literal(std::string text) { return ClientWord{ClientWord::kLiteral, std::move(text), ""}; }
ClientWord Value(std::string text, std::string name) {
  return ClientWord{ClientWord::kValue, std::move(text), std::move(name)};
}
ClientWord CommaList(std::string name) { return ClientWord{ClientWord::kCommaList, "", std::move(name)}; }

void Add(ClientWords& w, std::initializer_list<const char*> literals) {
  for (const char* l : literals) w.push_back(Literal(l));
}

// `name`'s word: a reference when the step sets it, else its known value,
// else `fallback` (a shell's ${NAME:-fallback}).
ClientWord Var(const ClientEnvironment& env, const std::string& name, const std::string& fallback) {
  if (env.InStep(name) && !env.Get(name).empty()) return Value("", name);
  const std::string v = env.Get(name);
  return Literal(v.empty() ? fallback : v);
}

bool StartsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// resolve_trace_source: the AgentX trace loader for the model family, or
// WEKA_LOADER_OVERRIDE when it names one of the loaders the scenario allows.
Result<std::string> TraceLoader(const ClientEnvironment& env) {
  static const char* const kLoaders[] = {
      "semianalysis_cc_traces_weka_with_subagents",        "semianalysis_cc_traces_weka_with_subagents_256k",
      "semianalysis_cc_traces_weka_with_subagents_060226", "semianalysis_cc_traces_weka_with_subagents_060226_256k",
      "semianalysis_cc_traces_weka_with_subagents_060526", "semianalysis_cc_traces_weka_with_subagents_060526_256k",
      "semianalysis_cc_traces_weka_with_subagents_060826", "semianalysis_cc_traces_weka_with_subagents_060826_256k",
      "semianalysis_cc_traces_weka_061326",                "semianalysis_cc_traces_weka_061326_256k",
      "semianalysis_cc_traces_weka_061526",                "semianalysis_cc_traces_weka_061526_256k",
      "semianalysis_cc_traces_weka_062126",                "semianalysis_cc_traces_weka_062126_256k"};
  const std::string prefix = env.Get("MODEL_PREFIX");
  const bool long_context = StartsWith(prefix, "dsv4") || StartsWith(prefix, "glm5.2") ||
                            StartsWith(prefix, "minimaxm3") || StartsWith(prefix, "kimik3");
  std::string loader = env.Get("WEKA_LOADER_OVERRIDE");
  if (loader.empty()) {
    loader = long_context ? "semianalysis_cc_traces_weka_062126" : "semianalysis_cc_traces_weka_062126_256k";
  }
  std::string allowed;
  for (const char* l : kLoaders) {
    if (loader == l) return loader;
    allowed += (allowed.empty() ? "" : ", ") + std::string(l);
  }
  return Error{"WEKA_LOADER_OVERRIDE='" + loader + "': unknown trace loader; allowed: " + allowed};
}

// A decimal integer, or `fallback` when `s` is not one.
long long IntOr(const std::string& s, long long fallback) {
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  return !s.empty() && end && *end == '\0' ? v : fallback;
}

void AddSplit(ClientWords& w, const std::string& text) {
  std::istringstream in(text);
  for (std::string word; in >> word;) w.push_back(Literal(word));
}

// build_replay_cmd's optional Dynamo routing flags.
void AddDynamoRouting(ClientWords& w, const ClientEnvironment& env) {
  const std::string conv = env.Get("AIPERF_USE_DYNAMO_CONV_AWARE_ROUTING");
  const std::string header = env.Get("AIPERF_HTTP_X_DYNAMO_SESSION_ID_FROM_CORRELATION_ID");
  if (!StartsWith(env.Get("FRAMEWORK"), "dynamo-") || conv == "0" || header == "true") return;
  Add(w, {"--use-dynamo-conv-aware-routing", "--dynamo-session-timeout-seconds"});
  w.push_back(Var(env, "AIPERF_DYNAMO_SESSION_TIMEOUT_SECONDS", "3600"));
}

}  // namespace

bool ClientEnvironment::InStep(const std::string& name) const {
  for (const auto& [n, v] : step) {
    if (n == name) return true;
  }
  return false;
}

std::string ClientEnvironment::Get(const std::string& name) const {
  return InStep(name) ? EnvValue(step, name) : EnvValue(known, name);
}

Result<ClientWords> AgenticReplayWords(const ClientEnvironment& env, const std::string& result_dir) {
  Result<std::string> loader = TraceLoader(env);
  if (!loader) return loader.error();
  const bool fast = env.Get("AIPERF_EXPERIMENTAL_FAST") == "1";
  const std::string duration = fast ? "1200" : env.Get("DURATION");
  ClientWords w;
  w.push_back(Var(env, "AIPERF_CLI", "aiperf"));
  Add(w, {"profile", "--scenario", "inferencex-agentx-mvp", "--url"});
  w.push_back(env.InStep("AIPERF_SERVER_URL") || !env.Get("AIPERF_SERVER_URL").empty()
                  ? Var(env, "AIPERF_SERVER_URL", "")
                  : Value("http://localhost:", "PORT"));
  Add(w, {"--endpoint", "/v1/chat/completions", "--endpoint-type", "chat", "--streaming", "--model"});
  w.push_back(env.Get("SERVED_MODEL_NAME").empty() ? Var(env, "MODEL", "") : Var(env, "SERVED_MODEL_NAME", ""));
  Add(w, {"--tokenizer"});
  w.push_back(Var(env, "MODEL", ""));
  Add(w, {"--concurrency"});
  w.push_back(Var(env, "CONC", ""));
  Add(w, {"--benchmark-duration"});
  w.push_back(fast ? Literal("1200") : Var(env, "DURATION", ""));
  Add(w, {"--stats-interval", "30", "--random-seed", "42", "--failed-request-threshold"});
  w.push_back(Var(env, "AIPERF_LIVE_FAILED_REQUEST_THRESHOLD", ""));
  Add(w, {"--trajectory-start-min-ratio", "0.25", "--trajectory-start-max-ratio", "0.75",
          "--warmup-requests-per-lane"});
  w.push_back(fast ? Literal("1") : Var(env, "AIPERF_WARMUP_REQUESTS_PER_LANE", "10"));
  Add(w, {"--trace-idle-gap-cap-seconds"});
  w.push_back(Var(env, "AIPERF_TRACE_IDLE_GAP_CAP_SECONDS", ""));
  Add(w, {"--warmup-grace-period"});
  w.push_back(Var(env, "AGENTIC_WARMUP_GRACE_PERIOD", "1800"));
  Add(w, {"--use-server-token-count"});
  // Word-split as build_replay_cmd's unquoted expansion splits it.
  if (const std::string extra = env.Get("AIPERF_EXTRA_INPUTS"); !extra.empty()) {
    Add(w, {"--extra-inputs"});
    AddSplit(w, extra);
  }
  AddDynamoRouting(w, env);
  Add(w, {"--no-gpu-telemetry", "--tokenizer-trust-remote-code", "--num-dataset-entries", "393", "--slice-duration",
          "1.0"});
  // (--max-context-length: never on a single node: benchmark_lib.sh unsets
  // MAX_MODEL_LEN for agentic runs, the native context is used.)
  if (!env.Get("AIPERF_SERVER_METRICS_URLS").empty()) {
    Add(w, {"--server-metrics"});
    w.push_back(env.InStep("AIPERF_SERVER_METRICS_URLS") ? CommaList("AIPERF_SERVER_METRICS_URLS")
                                                          : Literal(env.Get("AIPERF_SERVER_METRICS_URLS")));
    if (w.back().kind == ClientWord::kLiteral) {  // known now: split here as the launcher would
      const std::string urls = w.back().text;
      w.pop_back();
      std::istringstream in(urls);
      for (std::string u; std::getline(in, u, ',');) w.push_back(Literal(u));
    }
  }
  Add(w, {"--output-artifact-dir"});
  w.push_back(Literal(result_dir + "/aiperf_artifacts"));
  if (IntOr(duration, 0) < 900 || env.Get("AIPERF_UNSAFE_OVERRIDE") == "true") Add(w, {"--unsafe-override"});
  Add(w, {"--public-dataset"});
  w.push_back(Literal(loader.value()));
  return w;
}

ClientWords BenchServingWords(const ClientEnvironment& env, const std::string& result_dir,
                              const ClientDefaults& defaults) {
  const long long conc = IntOr(env.Get("CONC"), 1);
  ClientWords w;
  Add(w, {"python3"});
  w.push_back(Literal(defaults.bench_serving_dir + "/utils/bench_serving/benchmark_serving.py"));
  Add(w, {"--model"});
  w.push_back(Var(env, "MODEL", ""));
  Add(w, {"--backend", "vllm", "--base-url"});
  w.push_back(Value("http://0.0.0.0:", "PORT"));
  Add(w, {"--dataset-name", "random", "--random-input-len"});
  w.push_back(Var(env, "ISL", ""));
  Add(w, {"--random-output-len"});
  w.push_back(Var(env, "OSL", ""));
  Add(w, {"--random-range-ratio"});
  w.push_back(Var(env, "RANDOM_RANGE_RATIO", ""));
  Add(w, {"--num-prompts"});
  w.push_back(Literal(std::to_string(conc * 10)));
  Add(w, {"--max-concurrency"});
  w.push_back(Literal(std::to_string(conc)));
  Add(w, {"--request-rate", "inf", "--ignore-eos", "--save-result", "--num-warmups"});
  w.push_back(Literal(std::to_string(2 * conc)));
  Add(w, {"--percentile-metrics", "ttft,tpot,itl,e2el", "--result-dir"});
  w.push_back(Literal(result_dir));
  Add(w, {"--result-filename"});
  w.push_back(Literal(env.Get("RESULT_FILENAME") + ".json"));
  Add(w, {"--trust-remote-code"});
  return w;
}

Result<ClientWords> DefaultClientWords(const ClientEnvironment& env, const std::string& result_dir,
                                       const ClientDefaults& defaults) {
  if (env.Get("SCENARIO_TYPE") == "agentic-coding") return AgenticReplayWords(env, result_dir);
  return BenchServingWords(env, result_dir, defaults);
}

namespace {

// The launcher: $1 is the record file ("" for none), the rest the words,
// where \037NAME after a prefix is the value of NAME and \036NAME is NAME's
// value split at commas. Names are checked before they are looked up; no
// word is ever read as shell text.
const char kLauncher[] =
    "us=$(printf '\\037'); rs=$(printf '\\036'); record=$1; shift\n"
    "if [ -n \"${IX_PORT:-}\" ]; then PORT=$IX_PORT; export PORT; fi\n"
    "value() { case $1 in ''|[0-9]*|*[!A-Za-z0-9_]*) echo \"ix-client: bad variable name '$1'\" >&2; exit 2;; esac\n"
    "  eval \"v=\\${$1-}\"; }\n"
    "n=$#\n"
    "while [ \"$n\" -gt 0 ]; do\n"
    "  w=$1; shift; n=$((n - 1))\n"
    "  case $w in\n"
    "  \"$rs\"*) value \"${w#\"$rs\"}\"; set -f; old=$IFS; IFS=,\n"
    "    for u in $v; do case $u in ''|*[[:space:]]*) echo \"ERROR: ${w#\"$rs\"} must be a comma-separated list of"
    " non-empty URLs\" >&2; exit 1;; esac; set -- \"$@\" \"$u\"; done; IFS=$old; set +f;;\n"
    "  *\"$us\"*) value \"${w#*\"$us\"}\"; set -- \"$@\" \"${w%%\"$us\"*}$v\";;\n"
    "  *) set -- \"$@\" \"$w\";;\n"
    "  esac\n"
    "done\n"
    "if [ -n \"$record\" ]; then\n"
    "  printf '%s\\n' \"$*\" >\"$record\"\n"
    "  env | sed -n \"s/'/'\\\\\\\\''/g; s/^\\(AIPERF_[A-Za-z0-9_]*\\)=\\(.*\\)$/\\1='\\2'/p\" >>\"${record%/*}/benchmark.env\"\n"
    "fi\n"
    "exec \"$@\"\n";

}  // namespace

std::vector<std::string> LauncherArgv(const ClientWords& words, const std::string& record) {
  std::vector<std::string> argv = {"/bin/sh", "-c", kLauncher, "ix-client", record};
  for (const ClientWord& w : words) {
    switch (w.kind) {
      case ClientWord::kLiteral: argv.push_back(w.text); break;
      case ClientWord::kValue: argv.push_back(w.text + '\037' + w.name); break;
      case ClientWord::kCommaList: argv.push_back('\036' + w.name); break;
    }
  }
  return argv;
}

std::string DescribeClientWords(const ClientWords& words) {
  std::string out;
  for (const ClientWord& w : words) {
    out += out.empty() ? "" : " ";
    switch (w.kind) {
      case ClientWord::kLiteral: out += w.text; break;
      case ClientWord::kValue: out += w.text + "$" + w.name; break;
      case ClientWord::kCommaList: out += "${" + w.name + "//,/ }"; break;
    }
  }
  return out;
}

}  // namespace ix
