#include "router_args.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace ixfake::router {
namespace {

const std::vector<std::string> kPolicies = {"random", "round_robin", "cache_aware", "power_of_two",
                                            "consistent_hash"};

const std::vector<OptionSpec> kOptions = {
    {"--worker-urls", Arity::kMany, "WORKER_URLS"},
    {"--policy", Arity::kOne, "POLICY"},
    {"--intra-node-data-parallel-size", Arity::kOne, "INTRA_NODE_DATA_PARALLEL_SIZE"},
    {"--host", Arity::kOne, "HOST"},
    {"--port", Arity::kOne, "PORT"},
    {"--prometheus-host", Arity::kOne, "PROMETHEUS_HOST"},
    {"--prometheus-port", Arity::kOne, "PROMETHEUS_PORT"},
    {"--request-timeout-secs", Arity::kOne, "REQUEST_TIMEOUT_SECS"},
    {"--disable-retries", Arity::kNone, ""},
    {"--disable-circuit-breaker", Arity::kNone, ""},
    {"--log-level", Arity::kOne, "LOG_LEVEL"},
    {"--help", Arity::kNone, ""},
    {"-h", Arity::kNone, ""},
    {"--version", Arity::kNone, ""},
    {"-V", Arity::kNone, ""},
};

constexpr const char* kUsageTail =
    "\n\nUsage: vllm-router [OPTIONS]\n\nFor more information, try '--help'.\n";

[[noreturn]] void clap_error(const std::string& message) {
  usage_exit("%s%s", message.c_str(), kUsageTail);
}

void print_help() {
  std::printf(
      "vllm-router %s: fake vllm-router for tests (tests/fakes/README.md)\n\n"
      "Usage: vllm-router [OPTIONS]\n\nOptions:\n"
      "      --worker-urls <WORKER_URLS>...  worker base URLs (http://host:port)\n"
      "      --policy <POLICY>               consistent_hash (the only policy of the fake)\n"
      "      --intra-node-data-parallel-size <N>  data-parallel ranks per worker URL [default: 1]\n"
      "      --host <HOST>                   [default: 127.0.0.1]\n"
      "      --port <PORT>                   [default: 30000]\n"
      "      --prometheus-host <HOST>        [default: 127.0.0.1]\n"
      "      --prometheus-port <PORT>        [default: 29000]\n"
      "      --request-timeout-secs <SECS>   [default: 1800]\n"
      "      --disable-retries\n      --disable-circuit-breaker\n      --log-level <LEVEL>\n"
      "  -h, --help\n  -V, --version\n",
      kVersion);
}

int int_option(const StrictArgs& args, const char* name, const char* value_name, long long min, long long max,
               int fallback) {
  auto v = args.value(name);
  if (!v) return fallback;
  auto n = parse_int(*v, min, max);
  if (!n) {
    clap_error(strprintf("error: invalid value '%s' for '%s <%s>': expected an integer in %lld..=%lld", v->c_str(),
                         name, value_name, min, max));
  }
  return static_cast<int>(*n);
}

std::optional<double> env_seconds(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
  auto s = parse_seconds(v);
  if (!s) {
    usage_exit("vllm-router (fake): %s='%s': expected seconds (a number >= 0)\n", name, v);
  }
  return s;
}

}  // namespace

Config parse_config(int argc, char** argv) {
  std::vector<std::string> raw(argv + 1, argv + argc);
  StrictArgs args = parse_strict(raw, kOptions);
  if (!args.ok()) clap_error(args.error);
  if (args.has("--help") || args.has("-h")) {
    print_help();
    std::exit(0);
  }
  if (args.has("--version") || args.has("-V")) {
    std::printf("vllm-router %s\n", kVersion);
    std::exit(0);
  }
  Config cfg;
  if (auto p = args.value("--policy")) {
    if (std::find(kPolicies.begin(), kPolicies.end(), *p) == kPolicies.end()) {
      clap_error("error: invalid value '" + *p +
                 "' for '--policy <POLICY>'\n  [possible values: random, round_robin, cache_aware, power_of_two, "
                 "consistent_hash]");
    }
    if (*p != "consistent_hash") {
      usage_exit("error: the fake vllm-router implements only --policy consistent_hash, not '%s'\n", p->c_str());
    }
  }
  cfg.intra_dp = int_option(args, "--intra-node-data-parallel-size", "INTRA_NODE_DATA_PARALLEL_SIZE", 1, 1024, 1);
  cfg.port = int_option(args, "--port", "PORT", 0, 65535, cfg.port);
  cfg.prometheus_port = int_option(args, "--prometheus-port", "PROMETHEUS_PORT", 0, 65535, cfg.prometheus_port);
  cfg.request_timeout_s = int_option(args, "--request-timeout-secs", "REQUEST_TIMEOUT_SECS", 1, 1LL << 30,
                                     cfg.request_timeout_s);
  if (auto h = args.value("--host")) cfg.host = *h;
  if (auto h = args.value("--prometheus-host")) cfg.prometheus_host = *h;
  for (const auto& u : args.values("--worker-urls")) {
    HttpUrl url = parse_http_url(u);
    if (!url.ok()) clap_error("error: invalid value for '--worker-urls <WORKER_URLS>...': " + url.error);
    std::string base = u;
    while (!base.empty() && base.back() == '/') base.pop_back();
    // The real router expands a worker into ranks only when the size is > 1.
    if (cfg.intra_dp > 1) {
      for (int r = 0; r < cfg.intra_dp; ++r) cfg.targets.push_back({base + "@" + std::to_string(r), url, r});
    } else {
      cfg.targets.push_back({base, url, std::nullopt});
    }
  }
  cfg.start_delay_s = env_seconds("FAKE_ROUTER_START_DELAY_S").value_or(0);
  cfg.exit_after_s = env_seconds("FAKE_ROUTER_EXIT_AFTER_S");
  cfg.stall_after_s = env_seconds("FAKE_ROUTER_STALL_AFTER_S");
  return cfg;
}

}  // namespace ixfake::router
