#include "client_args.h"

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace ixfake::client {
namespace {

const std::vector<OptionSpec> kOptions = {
    {"--sessions", Arity::kOne, "S"},        {"--turns", Arity::kOne, "T"},
    {"--concurrency", Arity::kOne, "C"},     {"--endpoint", Arity::kOne, "URL"},
    {"--model", Arity::kOne, "NAME"},        {"--max-tokens", Arity::kOne, "N"},
    {"--timeout-s", Arity::kOne, "SECONDS"}, {"--session-prefix", Arity::kOne, "PREFIX"},
    {"--out", Arity::kOne, "FILE"},          {"--no-stream", Arity::kNone, ""},
    {"--keep-going", Arity::kNone, ""},      {"--help", Arity::kNone, ""},
    {"-h", Arity::kNone, ""},
};

constexpr const char* kHelp =
    "usage: ix-fake-client [--sessions S] [--turns T] [--concurrency C] [--endpoint URL]\n"
    "                      [--model NAME] [--max-tokens N] [--timeout-s SECONDS]\n"
    "                      [--session-prefix PREFIX] [--out FILE] [--no-stream] [--keep-going]\n"
    "Runs S multi-turn chat sessions (T turns each, C sessions at a time) against\n"
    "--endpoint, else $IX_ENDPOINT, else $AIPERF_SERVER_URL; writes --out, else\n"
    "$IX_RESULT_DIR/result.json, else ./result.json. Exit 1 if a request failed.\n";

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr, "ix-fake-client: %s\n%s", message.c_str(), kHelp);
  std::exit(2);
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

}  // namespace

Config parse_config(int argc, char** argv) {
  std::vector<std::string> raw(argv + 1, argv + argc);
  StrictArgs args = parse_strict(raw, kOptions);
  if (!args.ok()) usage_error(args.error.substr(args.error.rfind("error: ", 0) == 0 ? 7 : 0));
  if (args.has("--help") || args.has("-h")) {
    std::printf("%s", kHelp);
    std::exit(0);
  }
  Config cfg;
  cfg.sessions = positive(args, "--sessions", cfg.sessions);
  cfg.turns = positive(args, "--turns", cfg.turns);
  int conc_default = cfg.concurrency;
  if (const char* c = std::getenv("IX_CONC"); c != nullptr && *c != '\0') {
    auto n = parse_int(c, 1, 1000000);
    if (!n) usage_error(strprintf("IX_CONC='%s' is not a positive integer", c));
    conc_default = static_cast<int>(*n);
  }
  cfg.concurrency = positive(args, "--concurrency", conc_default);
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
  if (auto o = args.value("--out")) {
    cfg.out = *o;
  } else {
    std::string dir = env_or("IX_RESULT_DIR", "");
    cfg.out = dir.empty() ? "result.json" : dir + "/result.json";
  }
  cfg.aiperf_session_header_var = env_or("AIPERF_HTTP_X_SESSION_ID_FROM_CORRELATION_ID", "") == "1";
  return cfg;
}

}  // namespace ixfake::client
