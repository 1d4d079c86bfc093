#include "client_serving_args.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <map>

#include "fake_common.h"

namespace ixfake::client {

const char* const kServingUsage =
    "usage: ix-fake-client --benchmark-serving --model M [--backend B] [--base-url URL] [--endpoint PATH]\n"
    "         --dataset-name random [--random-input-len ISL] [--random-output-len OSL]\n"
    "         [--random-range-ratio R] [--num-prompts N] [--max-concurrency C] [--request-rate inf]\n"
    "         [--ignore-eos] [--profile] [--save-result] [--num-warmups W] [--percentile-metrics LIST]\n"
    "         [--result-dir DIR] [--result-filename NAME] [--use-chat-template] [--dsv4]\n"
    "         [--trust-remote-code] [--tokenizer T] [--tokenizer-mode MODE] [--seed S]\n"
    "Runs as InferenceX's utils/bench_serving/benchmark_serving.py: W warmup requests, then N\n"
    "single-turn requests, C at a time, with input and output lengths drawn from ISL, OSL and R\n"
    "as its random dataset draws them, against URL + PATH (default /v1/completions; backend\n"
    "openai-chat: /v1/chat/completions with messages); with --save-result, writes its result\n"
    "file (with the fake's own fields after it) to DIR/NAME. Exit 1 when more than 5% of the\n"
    "requests failed, 2 for a usage error. tests/fakes/README.md has the details.\n";

namespace {

// A flag of benchmark_serving.py's that the fake accepts; `value` is false
// for argparse's store_true flags.
struct FlagSpec {
  const char* name;
  bool value;
};

constexpr std::array<FlagSpec, 26> kFlags = {{
    {"--model", true},
    {"--backend", true},
    {"--base-url", true},
    {"--endpoint", true},
    {"--dataset-name", true},
    {"--random-input-len", true},
    {"--random-output-len", true},
    {"--random-range-ratio", true},
    {"--num-prompts", true},
    {"--max-concurrency", true},
    {"--request-rate", true},
    {"--ignore-eos", false},
    {"--profile", false},
    {"--save-result", false},
    {"--num-warmups", true},
    {"--percentile-metrics", true},
    {"--result-dir", true},
    {"--result-filename", true},
    {"--use-chat-template", false},
    {"--dsv4", false},
    {"--trust-remote-code", false},
    {"--tokenizer", true},
    {"--tokenizer-mode", true},
    {"--seed", true},
    {"--help", false},
    {"-h", false},
}};

// ASYNC_REQUEST_FUNCS's keys: those that post to an OpenAI completions
// endpoint, the chat one, and those whose protocols the fake does not speak.
constexpr std::array<const char*, 5> kCompletionBackends = {"vllm", "openai", "sglang", "lmdeploy", "scalellm"};
constexpr std::array<const char*, 3> kOtherBackends = {"tgi", "deepspeed-mii", "tensorrt-llm"};
constexpr std::array<const char*, 5> kTokenizerModes = {"auto", "slow", "mistral", "custom", "deepseek_v4"};
constexpr std::array<const char*, 4> kMetrics = {"ttft", "tpot", "itl", "e2el"};

template <std::size_t N>
bool one_of(const std::array<const char*, N>& names, const std::string& v) {
  return std::any_of(names.begin(), names.end(), [&](const char* n) { return v == n; });
}

// The flags given, by name: the last value of each (argparse keeps the last).
using Given = std::map<std::string, std::string>;

// Splits the tokens into `given`; an error message, or "" when all are known.
std::string split_flags(const std::vector<std::string>& args, Given& given) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& token = args[i];
    if (!is_flag_token(token)) return "unrecognized arguments: " + token;
    std::string name = token;
    std::optional<std::string> inline_value;
    if (std::size_t eq = token.find('='); token.rfind("--", 0) == 0 && eq != std::string::npos) {
      name = token.substr(0, eq);
      inline_value = token.substr(eq + 1);
    }
    const auto spec = std::find_if(kFlags.begin(), kFlags.end(), [&](const FlagSpec& f) { return name == f.name; });
    if (spec == kFlags.end()) return "unrecognized arguments: " + name;
    if (!spec->value) {
      if (inline_value) return "argument " + name + ": ignored explicit argument '" + *inline_value + "'";
      given[name] = "";
      continue;
    }
    if (inline_value) {
      given[name] = *inline_value;
    } else if (i + 1 < args.size() && !is_flag_token(args[i + 1])) {
      given[name] = args[++i];
    } else {
      return "argument " + name + ": expected one argument";
    }
  }
  return {};
}

// Reads the typed values out of `given` into a config; every check that
// fails sets `error` (the first one wins).
class Reader {
 public:
  explicit Reader(const Given& given) : given_(given) {}

  std::string error;

  bool has(const char* name) const { return given_.count(name) != 0; }
  std::string str(const char* name, const std::string& fallback) const {
    auto it = given_.find(name);
    return it == given_.end() ? fallback : it->second;
  }
  long long integer(const char* name, long long fallback, long long min, long long max) {
    if (!has(name)) return fallback;
    const std::string v = str(name, "");
    auto n = parse_int(v, min, max);
    if (!n) fail(strprintf("argument %s: '%s' is not an integer from %lld to %lld", name, v.c_str(), min, max));
    return n.value_or(fallback);
  }
  void fail(const std::string& message) {
    if (error.empty()) error = message;
  }

 private:
  const Given& given_;
};

// Python's float("inf") spellings; any finite rate would need arrival times
// the fake does not draw.
bool is_inf(std::string v) {
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (!v.empty() && v.front() == '+') v.erase(0, 1);
  return v == "inf" || v == "infinity";
}

void read_backend(Reader& r, ServingOptions& s) {
  s.backend = r.str("--backend", s.backend);
  s.chat = s.backend == "openai-chat";
  if (one_of(kOtherBackends, s.backend)) {
    r.fail("argument --backend: the fake speaks only the OpenAI completions and chat APIs, not '" + s.backend + "'");
  } else if (!s.chat && !one_of(kCompletionBackends, s.backend)) {
    r.fail("argument --backend: invalid choice: '" + s.backend +
           "' (choose from 'tgi', 'vllm', 'lmdeploy', 'deepspeed-mii', 'openai', 'openai-chat', 'tensorrt-llm', "
           "'scalellm', 'sglang')");
  }
  s.path = r.str("--endpoint", s.path);
  const std::string suffix = s.chat ? "chat/completions" : "completions";
  if (s.path.empty() || s.path.front() != '/' || s.path.size() < suffix.size() ||
      s.path.compare(s.path.size() - suffix.size(), suffix.size(), suffix) != 0) {
    r.fail("argument --endpoint: '" + s.path + "' must be a path starting with '/' and ending in '" + suffix +
           "' for backend " + s.backend);
  }
}

// --percentile-metrics: the known names given, in the real client's order
// (it ignores unknown ones too).
std::vector<std::string> read_metrics(const std::string& list) {
  std::vector<std::string> given;
  std::size_t start = 0;
  for (;;) {
    std::size_t comma = list.find(',', start);
    given.push_back(list.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::vector<std::string> out;
  for (const char* m : kMetrics) {
    if (std::find(given.begin(), given.end(), m) != given.end()) out.emplace_back(m);
  }
  return out;
}

void read_serving_options(Reader& r, ServingOptions& s, const std::string& model) {
  read_backend(r, s);
  s.tokenizer_id = r.str("--tokenizer", model);
  s.tokenizer_mode = r.str("--tokenizer-mode", s.tokenizer_mode);
  if (!one_of(kTokenizerModes, s.tokenizer_mode)) {
    r.fail("argument --tokenizer-mode: invalid choice: '" + s.tokenizer_mode +
           "' (choose from 'auto', 'slow', 'mistral', 'custom', 'deepseek_v4')");
  }
  if (r.has("--max-concurrency")) s.max_concurrency = static_cast<int>(r.integer("--max-concurrency", 1, 1, 100000));
  s.warmups = static_cast<int>(r.integer("--num-warmups", 0, 0, 1000000));
  s.ignore_eos = r.has("--ignore-eos");
  s.profile = r.has("--profile");
  s.save_result = r.has("--save-result");
  s.result_dir = r.str("--result-dir", "");
  s.use_chat_template = r.has("--use-chat-template");
  s.dsv4 = r.has("--dsv4");
  if (s.dsv4 && !s.use_chat_template) r.fail("--dsv4 requires --use-chat-template to be set.");
  s.trust_remote_code = r.has("--trust-remote-code");
  s.percentile_metrics = read_metrics(r.str("--percentile-metrics", "ttft,tpot,itl,e2el"));
}

LengthSpec read_lengths(Reader& r) {
  constexpr long long kMaxLen = 1 << 20;
  if (r.str("--dataset-name", "sharegpt") != "random") {
    r.fail(r.has("--dataset-name") ? "argument --dataset-name: invalid choice: '" + r.str("--dataset-name", "") +
                                         "' (choose from 'random')"
                                   : "Unknown dataset: sharegpt (pass --dataset-name random)");
  }
  LengthSpec spec;
  spec.isl = static_cast<int>(r.integer("--random-input-len", 1024, 1, kMaxLen));
  spec.osl = static_cast<int>(r.integer("--random-output-len", 128, 1, kMaxLen));
  spec.range_ratio = 1.0;  // benchmark_serving.py's default
  if (r.has("--random-range-ratio")) {
    const std::string v = r.str("--random-range-ratio", "");
    auto ratio = parse_seconds(v);  // a finite number >= 0
    if (!ratio || *ratio > 1) r.fail("argument --random-range-ratio: '" + v + "' is not a number from 0 to 1");
    spec.range_ratio = ratio.value_or(1.0);
  }
  spec.seed = static_cast<std::uint32_t>(r.integer("--seed", 0, 0, 4294967295LL));
  return spec;
}

}  // namespace

ServingParse parse_serving_args(const std::vector<std::string>& args) {
  ServingParse out;
  Given given;
  if (out.error = split_flags(args, given); !out.error.empty()) return out;
  if (given.count("--help") != 0 || given.count("-h") != 0) {
    out.help = true;
    return out;
  }
  Reader r(given);
  Config cfg;
  cfg.model = r.str("--model", "");
  if (cfg.model.empty()) r.fail("the following arguments are required: --model");
  ServingOptions s;
  read_serving_options(r, s, cfg.model);
  cfg.lengths = read_lengths(r);
  cfg.sessions = static_cast<int>(r.integer("--num-prompts", 1000, 1, 10000000));
  if (const std::string rate = r.str("--request-rate", "inf"); !is_inf(rate)) {
    r.fail("argument --request-rate: '" + rate + "': the fake sends every request at once; only inf is supported");
  }
  cfg.turns = 1;
  cfg.concurrency = s.max_concurrency.value_or(cfg.sessions);
  cfg.stream = true;  // the real request functions always stream
  cfg.keep_going = true;  // the real client sends every request whatever fails
  cfg.timeout_s = 6 * 60 * 60;  // its AIOHTTP_TIMEOUT
  cfg.session_prefix = "req-";
  cfg.endpoint = r.str("--base-url", "http://127.0.0.1:8000");
  cfg.url = parse_http_url(cfg.endpoint);
  if (!cfg.url.ok()) r.fail("argument --base-url: " + cfg.url.error);
  if (const std::string name = r.str("--result-filename", ""); s.save_result && !name.empty()) {
    cfg.out = s.result_dir.empty() || name.front() == '/' ? name : s.result_dir + "/" + name;  // os.path.join
  }
  cfg.serving = s;
  if (!r.error.empty()) {
    out.error = r.error;
    return out;
  }
  out.config = std::move(cfg);
  return out;
}

std::string default_result_path(const Config& cfg, const std::string& date) {
  const std::string& model = cfg.model;
  const std::string base_model = model.substr(model.rfind('/') == std::string::npos ? 0 : model.rfind('/') + 1);
  std::string name = cfg.serving ? cfg.serving->backend : std::string("vllm");
  name += "-infqps";
  if (cfg.serving && cfg.serving->max_concurrency) name += "-concurrency" + std::to_string(*cfg.serving->max_concurrency);
  name += "-" + base_model + "-" + date + ".json";
  const std::string dir = cfg.serving ? cfg.serving->result_dir : std::string();
  return dir.empty() ? name : dir + "/" + name;
}

}  // namespace ixfake::client
