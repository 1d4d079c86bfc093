#include "client_args.h"

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <vector>

#include "client_serving_args.h"

namespace ixfake::client {
namespace {

const std::vector<OptionSpec> kOptions = {
    {"--sessions", Arity::kOne, "S"},        {"--turns", Arity::kOne, "T"},
    {"--concurrency", Arity::kOne, "C"},     {"--endpoint", Arity::kOne, "URL"},
    {"--model", Arity::kOne, "NAME"},        {"--max-tokens", Arity::kOne, "N"},
    {"--timeout-s", Arity::kOne, "SECONDS"}, {"--session-prefix", Arity::kOne, "PREFIX"},
    {"--out", Arity::kOne, "FILE"},          {"--no-stream", Arity::kNone, ""},
    {"--keep-going", Arity::kNone, ""},      {"--seed", Arity::kOne, "N"},
    {"--help", Arity::kNone, ""},            {"-h", Arity::kNone, ""},
};

constexpr const char* kHelp =
    "usage: ix-fake-client --benchmark-serving BENCHMARK_SERVING_PY_ARGS... (--benchmark-serving --help)\n"
    "       ix-fake-client [--sessions S] [--turns T] [--concurrency C] [--endpoint URL]\n"
    "                      [--model NAME] [--max-tokens N] [--timeout-s SECONDS] [--seed N]\n"
    "                      [--session-prefix PREFIX] [--out FILE] [--no-stream] [--keep-going]\n"
    "Runs S multi-turn chat sessions (T turns each, C sessions at a time; C defaults to\n"
    "$IX_CONC, else $CONC, else 4) against --endpoint, else $IX_ENDPOINT, else\n"
    "$AIPERF_SERVER_URL, and writes benchmark_serving.py's result file with the\n"
    "fake's own fields after it.\n"
    "Lengths: with $ISL and $OSL set (InferenceX's), each request's prompt is an\n"
    "input length and its answer an output length (sent with ignore_eos) drawn as\n"
    "benchmark_serving.py's random dataset draws them: uniform in\n"
    "[int(LEN * $RANDOM_RANGE_RATIO), LEN] (ratio default 0.8), numpy's generator\n"
    "seeded with --seed (default 0); --max-tokens is then unused.\n"
    "Result file: --out FILE, else $RESULT_FILENAME.json in $IX_RESULT_DIR (or the\n"
    "current directory) when $RESULT_FILENAME is set, else $IX_RESULT_DIR/result.json,\n"
    "else ./result.json. Exit 1 if a request failed, 2 for a usage error.\n";

[[noreturn]] void usage_error(const std::string& message) {
  usage_exit("ix-fake-client: %s\n%s", message.c_str(), kHelp);
}

int positive(const StrictArgs& args, const char* name, int fallback) {
  auto v = args.value(name);
  if (!v) return fallback;
  auto n = parse_int(*v, 1, 1000000);
  if (!n) usage_error(strprintf("%s: '%s' is not a positive integer", name, v->c_str()));
  return static_cast<int>(*n);
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

// A positive integer from the environment variable `name`, or nullopt when
// it is unset or empty.
std::optional<int> env_positive(const char* name, long long max) {
  const std::string v = env_or(name, "");
  if (v.empty()) return std::nullopt;
  auto n = parse_int(v, 1, max);
  if (!n) usage_error(strprintf("%s='%s' is not an integer from 1 to %lld", name, v.c_str(), max));
  return static_cast<int>(*n);
}

// The concurrency: --concurrency, else $IX_CONC, else $CONC (InferenceX's).
int concurrency(const StrictArgs& args, int fallback) {
  std::optional<int> env = env_positive("IX_CONC", 1000000);
  if (!env) env = env_positive("CONC", 1000000);
  return positive(args, "--concurrency", env.value_or(fallback));
}

// $ISL and $OSL (both or neither), $RANDOM_RANGE_RATIO and --seed.
std::optional<LengthSpec> lengths(const StrictArgs& args) {
  constexpr long long kMaxLen = 1 << 20;
  const std::optional<int> isl = env_positive("ISL", kMaxLen), osl = env_positive("OSL", kMaxLen);
  if (!isl && !osl) return std::nullopt;
  if (!isl || !osl) usage_error(std::string(isl ? "OSL" : "ISL") + " is not set: set both ISL and OSL, or neither");
  LengthSpec spec;
  spec.isl = *isl;
  spec.osl = *osl;
  if (std::string r = env_or("RANDOM_RANGE_RATIO", ""); !r.empty()) {
    auto ratio = parse_seconds(r);  // a finite number >= 0
    if (!ratio || *ratio > 1) usage_error("RANDOM_RANGE_RATIO='" + r + "' is not a number from 0 to 1");
    spec.range_ratio = *ratio;
  }
  if (auto v = args.value("--seed")) {
    auto seed = parse_int(*v, 0, 4294967295LL);
    if (!seed) usage_error("--seed: '" + *v + "' is not an integer from 0 to 4294967295");
    spec.seed = static_cast<std::uint32_t>(*seed);
  }
  return spec;
}

// --out, else $RESULT_FILENAME.json (InferenceX's name, without the
// extension), else result.json; the last two in $IX_RESULT_DIR when set.
std::string result_path(const StrictArgs& args) {
  if (auto o = args.value("--out")) return *o;
  const std::string dir = env_or("IX_RESULT_DIR", "");
  const std::string name = env_or("RESULT_FILENAME", "");
  const std::string file = name.empty() ? "result.json" : name + ".json";
  return dir.empty() ? file : dir + "/" + file;
}

// The --benchmark-serving mode: benchmark_serving.py's command line.
Config parse_serving_config(const std::vector<std::string>& raw) {
  ServingParse parsed = parse_serving_args(raw);
  if (parsed.help) {
    std::printf("%s", kServingUsage);
    std::exit(0);
  }
  if (!parsed.config) {
    usage_exit("%six-fake-client --benchmark-serving: error: %s\n", kServingUsage, parsed.error.c_str());
  }
  return std::move(*parsed.config);
}

}  // namespace

Config parse_config(int argc, char** argv) {
  std::vector<std::string> raw(argv + 1, argv + argc);
  if (!raw.empty() && raw.front() == "--benchmark-serving") return parse_serving_config({raw.begin() + 1, raw.end()});
  StrictArgs args = parse_strict(raw, kOptions);
  if (!args.ok()) usage_error(args.error.substr(args.error.rfind("error: ", 0) == 0 ? 7 : 0));
  if (args.has("--help") || args.has("-h")) {
    std::printf("%s", kHelp);
    std::exit(0);
  }
  Config cfg;
  cfg.sessions = positive(args, "--sessions", cfg.sessions);
  cfg.turns = positive(args, "--turns", cfg.turns);
  cfg.concurrency = concurrency(args, cfg.concurrency);
  cfg.max_tokens = positive(args, "--max-tokens", cfg.max_tokens);
  if (auto t = args.value("--timeout-s")) {
    auto s = parse_seconds(*t);
    if (!s || *s <= 0) usage_error("--timeout-s: '" + *t + "' is not a positive number of seconds");
    cfg.timeout_s = *s;
  }
  cfg.stream = !args.has("--no-stream");
  cfg.keep_going = args.has("--keep-going");
  if (auto p = args.value("--session-prefix")) cfg.session_prefix = *p;
  cfg.endpoint = args.value("--endpoint").value_or(env_or("IX_ENDPOINT", env_or("AIPERF_SERVER_URL", "")));
  if (cfg.endpoint.empty()) usage_error("no endpoint: pass --endpoint URL or set IX_ENDPOINT or AIPERF_SERVER_URL");
  cfg.url = parse_http_url(cfg.endpoint);
  if (!cfg.url.ok()) usage_error("endpoint " + cfg.url.error);
  // AIPerf's base URL may end in /v1; the client adds /v1/... itself.
  if (cfg.url.base_path.size() >= 3 && cfg.url.base_path.compare(cfg.url.base_path.size() - 3, 3, "/v1") == 0) {
    cfg.url.base_path.resize(cfg.url.base_path.size() - 3);
  }
  cfg.model = args.value("--model").value_or("");
  cfg.out = result_path(args);
  cfg.lengths = lengths(args);
  cfg.aiperf_session_header_var = env_or("AIPERF_HTTP_X_SESSION_ID_FROM_CORRELATION_ID", "") == "1";
  return cfg;
}

}  // namespace ixfake::client
