// Fake `vllm` (installed as `vllm` in the fakes bin directory): stands in for
// `vllm serve MODEL [flags...]` where no GPU and no model exist. It accepts any
// flag, records its argv and environment, forks one EngineCore child per local
// data-parallel rank, listens only once "ready", serves the OpenAI endpoints,
// /health and /metrics, and injects the failures real vLLM is known for.
// Documentation: tests/fakes/README.md.
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <netdb.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake_common.h"
#include "http_server.h"

extern char** environ;

namespace {

using ixfake::logf;
using ixfake::now_s;
using ixfake::strprintf;
using JsonWriter = rapidjson::Writer<rapidjson::StringBuffer>;
namespace http = ixfake::http;

constexpr const char* kVersion = "0.0.0+fake";
constexpr double kChildGraceS = 2.0;
// Seconds a shutdown takes after the engine cores stopped (real vLLM frees
// GPU memory and NCCL state): FAKE_VLLM_STOP_DELAY_S, set before any thread.
double g_stop_delay_s = 0;

// ------------------------------------------------------------ configuration

struct Config {
  std::vector<std::string> argv;
  std::string model_path;
  std::vector<std::string> served_names;
  std::string host = "0.0.0.0";
  int port = 8000;
  int dp_size = 1;
  std::optional<int> dp_rank;   // --data-parallel-rank (external load balancing)
  std::vector<int> local_ranks; // the ranks this process serves, one EngineCore each
  long long max_model_len = 8192;
  std::string record_dir = ".";

  // Fault switches (see README.md).
  std::string fault_only_if_arg;
  bool faults_active = true;
  double start_delay_s = 0.05;
  bool never_ready = false;
  std::optional<double> crash_engine_after_s;
  int crash_rank = -1;
  std::optional<double> exit0_after_s;
  std::optional<double> hang_after_s;
  double token_delay_s = 0;
};

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr,
               "usage: vllm serve [model_tag] [options]\n"
               "vllm serve: error: %s\n",
               message.c_str());
  std::exit(2);
}

[[noreturn]] void env_error(const char* name, const std::string& value, const char* expected) {
  std::fprintf(stderr, "vllm (fake): %s='%s': expected %s\n", name, value.c_str(), expected);
  std::exit(2);
}

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

std::optional<double> env_seconds(const char* name) {
  auto v = env(name);
  if (!v) return std::nullopt;
  auto s = ixfake::parse_seconds(*v);
  if (!s) env_error(name, *v, "seconds (a number >= 0)");
  return s;
}

// The single value of a flag, or nullopt when absent; a flag given without
// a value is an argparse error.
std::optional<std::string> flag_value(const ixfake::LooseArgs& args, std::string_view name) {
  const auto* f = args.last(name);
  if (f == nullptr) return std::nullopt;
  if (f->values.empty()) usage_error("argument " + std::string(name) + ": expected one argument");
  return f->values.front();
}

std::optional<int> int_flag(const ixfake::LooseArgs& args, std::initializer_list<const char*> names,
                            long long min, long long max) {
  for (const char* name : names) {
    if (auto v = flag_value(args, name)) {
      auto n = ixfake::parse_int(*v, min, max);
      if (!n) {
        usage_error(strprintf("argument %s: invalid int value: '%s' (expected %lld-%lld)", name,
                              v->c_str(), min, max));
      }
      return static_cast<int>(*n);
    }
  }
  return std::nullopt;
}

// vLLM's human-readable integers: 1k = 1000, 1K = 1024, 1m = 10^6, 1M = 2^20.
std::optional<long long> parse_human_int(const std::string& text) {
  if (text.empty()) return std::nullopt;
  long long mult = 1;
  std::string digits = text;
  switch (text.back()) {
    case 'k': mult = 1000; break;
    case 'K': mult = 1024; break;
    case 'm': mult = 1000000; break;
    case 'M': mult = 1048576; break;
    case 'g': mult = 1000000000; break;
    case 'G': mult = 1073741824; break;
    default: break;
  }
  if (mult != 1) digits.pop_back();
  auto n = ixfake::parse_int(digits, 1, 1LL << 40);
  if (!n) return std::nullopt;
  return *n * mult;
}

Config parse_config(int argc, char** argv) {
  Config cfg;
  cfg.argv.assign(argv, argv + argc);
  if (argc >= 2 && (std::strcmp(argv[1], "--version") == 0 || std::strcmp(argv[1], "-v") == 0)) {
    std::printf("%s\n", kVersion);
    std::exit(0);
  }
  if (argc >= 2 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
    std::printf("usage: vllm serve MODEL [flags...]   (fake vLLM for tests; see tests/fakes/README.md)\n");
    std::exit(0);
  }
  if (argc < 2 || std::strcmp(argv[1], "serve") != 0) {
    std::fprintf(stderr, "usage: vllm serve MODEL [flags...]\nvllm (fake): only the 'serve' subcommand exists\n");
    std::exit(2);
  }
  std::vector<std::string> rest(argv + 2, argv + argc);
  if (std::find(rest.begin(), rest.end(), "--help") != rest.end()) {
    std::printf("usage: vllm serve MODEL [flags...]   (fake vLLM for tests; see tests/fakes/README.md)\n");
    std::exit(0);
  }
  ixfake::LooseArgs args = ixfake::parse_loose(rest, {"--served-model-name"});

  if (args.positionals.size() > 1) {
    std::string extra;
    for (std::size_t i = 1; i < args.positionals.size(); ++i) extra += " " + args.positionals[i];
    usage_error("unrecognized arguments:" + extra);
  }
  if (!args.positionals.empty()) {
    cfg.model_path = args.positionals.front();
  } else if (auto m = flag_value(args, "--model")) {
    cfg.model_path = *m;
  } else {
    usage_error("the model is required: vllm serve MODEL");
  }
  if (const auto* f = args.last("--served-model-name")) {
    if (f->values.empty()) usage_error("argument --served-model-name: expected at least one argument");
    cfg.served_names = f->values;
  } else {
    cfg.served_names = {cfg.model_path};
  }
  if (auto h = flag_value(args, "--host")) cfg.host = *h;
  if (auto p = int_flag(args, {"--port"}, 0, 65535)) cfg.port = *p;
  if (auto n = int_flag(args, {"--data-parallel-size", "-dp"}, 1, 1024)) cfg.dp_size = *n;
  cfg.dp_rank = int_flag(args, {"--data-parallel-rank", "-dpn"}, 0, 1023);
  auto local = int_flag(args, {"--data-parallel-size-local", "-dpl"}, 1, 1024);
  auto start = int_flag(args, {"--data-parallel-start-rank", "-dpr"}, 0, 1023);
  (void)int_flag(args, {"--data-parallel-rpc-port", "-dpp"}, 1, 65535);
  (void)flag_value(args, "--data-parallel-address");
  (void)flag_value(args, "-dpa");
  if (cfg.dp_rank) {
    if (*cfg.dp_rank >= cfg.dp_size) {
      usage_error(strprintf("--data-parallel-rank %d is out of range for --data-parallel-size %d",
                            *cfg.dp_rank, cfg.dp_size));
    }
    cfg.local_ranks = {*cfg.dp_rank};
  } else {
    int first = start.value_or(0);
    int count = local.value_or(cfg.dp_size - first);
    if (count < 1 || first + count > cfg.dp_size) {
      usage_error(strprintf("local data-parallel ranks %d..%d do not fit --data-parallel-size %d", first,
                            first + count - 1, cfg.dp_size));
    }
    for (int r = first; r < first + count; ++r) cfg.local_ranks.push_back(r);
  }
  if (auto v = flag_value(args, "--max-model-len")) {
    if (*v != "-1" && *v != "auto") {
      auto n = parse_human_int(*v);
      if (!n) usage_error("argument --max-model-len: invalid value: '" + *v + "'");
      cfg.max_model_len = *n;
    }
  }
  // JSON-valued flags (--speculative-config, --compilation-config, ...): vLLM
  // parses them with json.loads, so a value that looks like JSON must be JSON.
  // A value that starts with a quote was quoted for a shell that never ran.
  for (const auto& f : args.flags) {
    if (f.values.empty()) continue;
    const std::string& v = f.values.front();
    bool config_flag = f.name.size() > 7 && f.name.compare(f.name.size() - 7, 7, "-config") == 0;
    if (!config_flag || v.empty()) continue;
    if (v.front() == '\'' || v.front() == '"') {
      usage_error("argument " + f.name + ": invalid loads value: " + v + " (shell quotes inside the value)");
    }
    if (v.front() == '{' || v.front() == '[') {
      rapidjson::Document d;
      d.Parse(v.c_str());
      if (d.HasParseError()) usage_error("argument " + f.name + ": invalid loads value: " + v);
    }
  }

  if (auto d = env("FAKE_VLLM_RECORD_DIR")) cfg.record_dir = *d;
  if (auto only = env("FAKE_VLLM_FAULT_ONLY_IF_ARG"); only && !only->empty()) {
    cfg.fault_only_if_arg = *only;
    cfg.faults_active = std::any_of(cfg.argv.begin(), cfg.argv.end(), [&](const std::string& a) {
      return a.find(*only) != std::string::npos;
    });
    // "--flag=value" also matches the two arguments "--flag" "value".
    for (size_t i = 0; i + 1 < cfg.argv.size(); ++i) {
      if (cfg.argv[i] + "=" + cfg.argv[i + 1] == *only) cfg.faults_active = true;
    }
  }
  // Parse every switch even when inactive, so a typo is an error either way.
  auto delay = env_seconds("FAKE_VLLM_START_DELAY_S");
  bool never = false;
  if (auto v = env("FAKE_VLLM_NEVER_READY"); v && !v->empty()) {
    if (*v != "0" && *v != "1") env_error("FAKE_VLLM_NEVER_READY", *v, "0 or 1");
    never = *v == "1";
  }
  auto crash = env_seconds("FAKE_VLLM_CRASH_ENGINE_AFTER_S");
  auto exit0 = env_seconds("FAKE_VLLM_EXIT0_AFTER_S");
  auto hang = env_seconds("FAKE_VLLM_HANG_AFTER_S");
  int crash_rank = cfg.local_ranks.back();
  if (auto v = env("FAKE_VLLM_CRASH_ENGINE_RANK")) {
    auto r = ixfake::parse_int(*v, 0, 1023);
    if (!r || std::find(cfg.local_ranks.begin(), cfg.local_ranks.end(), *r) == cfg.local_ranks.end()) {
      env_error("FAKE_VLLM_CRASH_ENGINE_RANK", *v, "one of this process's data-parallel ranks");
    }
    crash_rank = static_cast<int>(*r);
  }
  if (cfg.faults_active) {
    if (delay) cfg.start_delay_s = *delay;
    cfg.never_ready = never;
    cfg.crash_engine_after_s = crash;
    cfg.crash_rank = crash_rank;
    cfg.exit0_after_s = exit0;
    cfg.hang_after_s = hang;
  }
  if (auto v = env("FAKE_VLLM_TOKEN_DELAY_MS")) {
    auto s = ixfake::parse_seconds(*v);
    if (!s) env_error("FAKE_VLLM_TOKEN_DELAY_MS", *v, "milliseconds (a number >= 0)");
    cfg.token_delay_s = *s / 1000.0;
  }
  if (auto s = env_seconds("FAKE_VLLM_STOP_DELAY_S")) g_stop_delay_s = *s;
  return cfg;
}

// ---------------------------------------------------------------- children

struct Child {
  int rank;
  pid_t pid;
  bool alive;
};

std::mutex g_children_mutex;
std::vector<Child> g_children;
std::atomic<bool> g_shutting_down{false};
int g_reservation_fd = -1;

std::string wait_status_text(int status) {
  if (WIFEXITED(status)) return strprintf("exit status %d", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return strprintf("killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
  return strprintf("status 0x%x", status);
}

// The EngineCore process of one data-parallel rank. Forked before any thread
// exists. PR_SET_PDEATHSIG fires when the forking thread (the main thread,
// which lives as long as the process) dies, so it never outlives the server.
[[noreturn]] void engine_core_main(int rank, pid_t parent) {
  std::string name = "EngineCore_DP" + std::to_string(rank);
  ::prctl(PR_SET_NAME, name.c_str(), 0, 0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  if (::getppid() != parent) _exit(1);
  if (g_reservation_fd >= 0) ::close(g_reservation_fd);
  ixfake::set_log_tag(name);
  logf("engine core for data-parallel rank %d started (parent %d)", rank, static_cast<int>(parent));
  sigset_t set = ixfake::handled_signals();
  for (;;) {
    int sig = 0;
    if (sigwait(&set, &sig) != 0) continue;
    if (sig == SIGUSR1) {
      logf("EngineCore encountered a fatal error (injected by FAKE_VLLM_CRASH_ENGINE_AFTER_S); exiting with status 1");
      _exit(1);
    }
    if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP) {
      logf("received %s, shutting down", strsignal(sig));
      _exit(0);
    }
  }
}

// Stops every child (TERM, grace, KILL) and exits the process. Safe to call
// from any thread; the first caller wins.
[[noreturn]] void shutdown_and_exit(int code, const std::string& reason) {
  static std::mutex once;
  once.lock();  // never released: a second caller waits for the _exit
  g_shutting_down.store(true);
  logf("%s: shutting down API server and engine cores", reason.c_str());
  {
    std::lock_guard<std::mutex> lock(g_children_mutex);
    for (auto& c : g_children) {
      if (c.alive) ::kill(c.pid, SIGTERM);
    }
  }
  double deadline = now_s() + kChildGraceS;
  for (;;) {
    bool any = false;
    {
      std::lock_guard<std::mutex> lock(g_children_mutex);
      for (auto& c : g_children) {
        if (!c.alive) continue;
        int st = 0;
        pid_t r = ::waitpid(c.pid, &st, WNOHANG);
        if (r == c.pid || (r < 0 && errno == ECHILD)) {
          c.alive = false;
        } else {
          any = true;
        }
      }
    }
    if (!any) break;
    if (now_s() > deadline) {
      std::lock_guard<std::mutex> lock(g_children_mutex);
      for (auto& c : g_children) {
        if (!c.alive) continue;
        ::kill(c.pid, SIGKILL);
        int st = 0;
        ::waitpid(c.pid, &st, 0);
        c.alive = false;
      }
      break;
    }
    ixfake::sleep_s(0.001);
  }
  if (g_stop_delay_s > 0) {
    logf("releasing resources (FAKE_VLLM_STOP_DELAY_S=%g)", g_stop_delay_s);
    ixfake::sleep_s(g_stop_delay_s);
  }
  logf("shutdown complete, exiting with status %d", code);
  _exit(code);
}

void reap_children() {
  std::lock_guard<std::mutex> lock(g_children_mutex);
  for (;;) {
    int st = 0;
    pid_t pid = ::waitpid(-1, &st, WNOHANG);
    if (pid <= 0) break;
    for (auto& c : g_children) {
      if (c.pid != pid) continue;
      c.alive = false;
      if (g_shutting_down.load()) {
        logf("EngineCore_DP%d (pid %d) stopped: %s", c.rank, static_cast<int>(pid), wait_status_text(st).c_str());
        continue;
      }
      // Real vLLM's API server does not notice here and keeps answering
      // /health with 200: the bug the step supervisor must catch.
      logf("Engine core proc EngineCore_DP%d (pid %d) died unexpectedly: %s; the API server keeps serving",
           c.rank, static_cast<int>(pid), wait_status_text(st).c_str());
    }
  }
}

void signal_loop() {
  sigset_t set = ixfake::handled_signals();
  for (;;) {
    int sig = 0;
    if (sigwait(&set, &sig) != 0) continue;
    switch (sig) {
      case SIGCHLD: reap_children(); break;
      case SIGTERM:
      case SIGINT:
      case SIGHUP: shutdown_and_exit(0, strprintf("received %s", strsignal(sig)));
      default: break;
    }
  }
}

// ------------------------------------------------------------- the record

std::string record_json(const Config& cfg) {
  rapidjson::StringBuffer sb;
  JsonWriter w(sb);
  w.StartObject();
  w.Key("argv");
  w.StartArray();
  for (const auto& a : cfg.argv) w.String(a.c_str(), static_cast<rapidjson::SizeType>(a.size()));
  w.EndArray();
  std::map<std::string, std::string> envmap;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string kv(*e);
    std::size_t eq = kv.find('=');
    if (eq == std::string::npos) continue;
    envmap.emplace(kv.substr(0, eq), kv.substr(eq + 1));  // first one wins, like getenv
  }
  w.Key("env");
  w.StartObject();
  for (const auto& [k, v] : envmap) {
    w.Key(k.c_str(), static_cast<rapidjson::SizeType>(k.size()));
    w.String(v.c_str(), static_cast<rapidjson::SizeType>(v.size()));
  }
  w.EndObject();
  w.Key("pid");
  w.Int(static_cast<int>(::getpid()));
  w.Key("engine_cores");
  w.StartArray();
  {
    std::lock_guard<std::mutex> lock(g_children_mutex);
    for (const auto& c : g_children) {
      w.StartObject();
      w.Key("rank");
      w.Int(c.rank);
      w.Key("pid");
      w.Int(static_cast<int>(c.pid));
      w.Key("comm");
      w.String(("EngineCore_DP" + std::to_string(c.rank)).c_str());
      w.EndObject();
    }
  }
  w.EndArray();
  w.EndObject();
  return std::string(sb.GetString(), sb.GetSize()) + "\n";
}

// A bound but not listening socket, as vLLM creates before loading the model:
// the port is taken (a second server fails at once) but connections are
// refused until the server listens.
int reserve_port(const Config& cfg, int& bound_port) {
  struct addrinfo hints {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  struct addrinfo* res = nullptr;
  std::string port_text = std::to_string(cfg.port);
  int rc = ::getaddrinfo(cfg.host.empty() ? nullptr : cfg.host.c_str(), port_text.c_str(), &hints, &res);
  if (rc != 0) {
    std::fprintf(stderr, "ERROR: cannot resolve --host %s: %s\n", cfg.host.c_str(), gai_strerror(rc));
    std::exit(1);
  }
  int fd = -1;
  int err = 0;
  for (auto* ai = res; ai != nullptr; ai = ai->ai_next) {
    fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      err = errno;
      continue;
    }
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) == 0) break;
    err = errno;
    ::close(fd);
    fd = -1;
  }
  ::freeaddrinfo(res);
  if (fd < 0) {
    std::fprintf(stderr, "ERROR: [Errno %d] error while attempting to bind on address ('%s', %d): %s\n", err,
                 cfg.host.c_str(), cfg.port, std::strerror(err));
    logf("ERROR: cannot bind %s:%d: %s", cfg.host.c_str(), cfg.port, std::strerror(err));
    std::exit(1);
  }
  struct sockaddr_storage ss {};
  socklen_t len = sizeof ss;
  ::getsockname(fd, reinterpret_cast<struct sockaddr*>(&ss), &len);
  if (ss.ss_family == AF_INET) {
    bound_port = ntohs(reinterpret_cast<struct sockaddr_in*>(&ss)->sin_port);
  } else {
    bound_port = ntohs(reinterpret_cast<struct sockaddr_in6*>(&ss)->sin6_port);
  }
  return fd;
}

// ------------------------------------------------------------------ metrics

struct Histogram {
  std::vector<double> bounds;
  std::vector<unsigned long long> counts;  // cumulative is computed on output
  double sum = 0;
  unsigned long long count = 0;
  explicit Histogram(std::vector<double> b) : bounds(std::move(b)), counts(bounds.size(), 0) {}
  void observe(double v) {
    for (std::size_t i = 0; i < bounds.size(); ++i) {
      if (v <= bounds[i]) ++counts[i];
    }
    sum += v;
    ++count;
  }
};

std::vector<double> latency_buckets() {
  return {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0};
}

struct RankStats {
  long running = 0;
  unsigned long long prompt_tokens = 0;
  unsigned long long generation_tokens = 0;
  unsigned long long success_stop = 0;
  unsigned long long success_length = 0;
  unsigned long long aborted = 0;
  Histogram e2e{latency_buckets()};
  Histogram ttft{latency_buckets()};
};

// ------------------------------------------------------------------ serving

struct Generation {
  std::vector<std::string> tokens;
  int prompt_tokens = 0;
  std::string finish_reason;
};

int count_words(std::string_view text) {
  int n = 0;
  bool in_word = false;
  for (char c : text) {
    bool space = std::isspace(static_cast<unsigned char>(c)) != 0;
    if (!space && !in_word) ++n;
    in_word = !space;
  }
  return n;
}

// A short answer that depends only on the prompt and max_tokens.
Generation generate(const std::string& prompt, int prompt_tokens, int max_tokens) {
  static const char* const kWords[] = {"the",  "fake",  "engine", "answers", "every", "turn",
                                       "with", "a",     "short",  "steady",  "reply", "from",
                                       "one",  "rank",  "of",     "many"};
  Generation g;
  g.prompt_tokens = prompt_tokens;
  std::uint64_t h = ixfake::hash64(prompt);
  int natural = 6 + static_cast<int>(h % 5);
  int n = std::min(max_tokens, natural);
  g.finish_reason = n < natural ? "length" : "stop";
  for (int i = 0; i < n; ++i) {
    std::string word = kWords[ixfake::hash64(prompt + "#" + std::to_string(i)) % 16];
    if (i == 0) word[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(word[0])));
    g.tokens.push_back(i == 0 ? word : " " + word);
  }
  if (g.finish_reason == "stop" && !g.tokens.empty()) g.tokens.back() += ".";
  return g;
}

class Engine {
 public:
  explicit Engine(Config cfg) : cfg_(std::move(cfg)) {
    for (int r : cfg_.local_ranks) stats_.emplace(r, RankStats{});
  }

  const Config& cfg() const { return cfg_; }
  std::atomic<bool> hang{false};

  void install(http::Server& svr) {
    svr.set_pre_routing_handler([this](const http::Request& req) {
      if (hang.load()) {
        logf("hang (FAKE_VLLM_HANG_AFTER_S): holding %s %s from %s:%d forever", req.method.c_str(),
             req.path.c_str(), req.remote_addr.c_str(), req.remote_port);
        for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
      }
    });
    svr.set_logger([](const http::Request& req, const http::Response& res) {
      std::string rank = res.get_header_value("X-Served-By-Rank");
      logf("%s:%d - \"%s %s HTTP/1.1\" %d%s%s", req.remote_addr.c_str(), req.remote_port, req.method.c_str(),
           req.path.c_str(), res.status, rank.empty() ? "" : " rank=", rank.c_str());
    });
    svr.set_error_handler([](const http::Request&, http::Response& res) {
      if (!res.body.empty()) return;
      res.set_content(res.status == 404 ? R"({"detail":"Not Found"})" : R"({"detail":"Error"})",
                      "application/json");
    });
    svr.Get("/health", [](const http::Request&, http::Response& res) { res.status = 200; });
    svr.Get("/ping", [](const http::Request&, http::Response& res) { res.status = 200; });
    svr.Get("/version", [](const http::Request&, http::Response& res) {
      res.set_content(std::string(R"({"version":")") + kVersion + "\"}", "application/json");
    });
    svr.Get("/v1/models", [this](const http::Request&, http::Response& res) { models(res); });
    svr.Get("/metrics", [this](const http::Request&, http::Response& res) { metrics(res); });
    svr.Post("/v1/completions",
             [this](const http::Request& req, http::Response& res) { completion(req, res, false); });
    svr.Post("/v1/chat/completions",
             [this](const http::Request& req, http::Response& res) { completion(req, res, true); });
  }

 private:
  static void json_error(http::Response& res, int status, const std::string& message, const char* type) {
    rapidjson::StringBuffer sb;
    JsonWriter w(sb);
    w.StartObject();
    w.Key("error");
    w.StartObject();
    w.Key("message");
    w.String(message.c_str());
    w.Key("type");
    w.String(type);
    w.Key("param");
    w.Null();
    w.Key("code");
    w.Int(status);
    w.EndObject();
    w.EndObject();
    res.status = status;
    res.set_content(sb.GetString(), "application/json");
  }

  void models(http::Response& res) const {
    rapidjson::StringBuffer sb;
    JsonWriter w(sb);
    w.StartObject();
    w.Key("object");
    w.String("list");
    w.Key("data");
    w.StartArray();
    for (const auto& name : cfg_.served_names) {
      w.StartObject();
      w.Key("id");
      w.String(name.c_str());
      w.Key("object");
      w.String("model");
      w.Key("created");
      w.Int64(static_cast<std::int64_t>(std::time(nullptr)));
      w.Key("owned_by");
      w.String("vllm");
      w.Key("root");
      w.String(cfg_.model_path.c_str());
      w.Key("parent");
      w.Null();
      w.Key("max_model_len");
      w.Int64(cfg_.max_model_len);
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
    res.set_content(sb.GetString(), "application/json");
  }

  void metrics(http::Response& res) {
    std::string model = ixfake::prom_escape(cfg_.served_names.front());
    std::string out;
    auto labels = [&](int rank, const std::string& extra = "") {
      return strprintf("{engine=\"%d\",model_name=\"%s\"%s}", rank, model.c_str(), extra.c_str());
    };
    auto header = [&](const char* name, const char* type, const char* help) {
      out += strprintf("# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
    };
    std::lock_guard<std::mutex> lock(stats_mutex_);
    header("vllm:num_requests_running", "gauge", "Number of requests in model execution batches.");
    for (auto& [r, s] : stats_) out += "vllm:num_requests_running" + labels(r) + strprintf(" %ld.0\n", s.running);
    header("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.");
    for (auto& [r, s] : stats_) out += "vllm:num_requests_waiting" + labels(r) + " 0.0\n";
    header("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.");
    for (auto& [r, s] : stats_) {
      out += "vllm:kv_cache_usage_perc" + labels(r) + strprintf(" %.4f\n", std::min(1.0, 0.01 * static_cast<double>(s.running)));
    }
    header("vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.");
    for (auto& [r, s] : stats_) out += "vllm:prompt_tokens_total" + labels(r) + strprintf(" %llu.0\n", s.prompt_tokens);
    header("vllm:generation_tokens_total", "counter", "Number of generation tokens processed.");
    for (auto& [r, s] : stats_) {
      out += "vllm:generation_tokens_total" + labels(r) + strprintf(" %llu.0\n", s.generation_tokens);
    }
    header("vllm:request_success_total", "counter", "Count of successfully processed requests.");
    for (auto& [r, s] : stats_) {
      out += "vllm:request_success_total" + labels(r, ",finished_reason=\"stop\"") + strprintf(" %llu.0\n", s.success_stop);
      out += "vllm:request_success_total" + labels(r, ",finished_reason=\"length\"") +
             strprintf(" %llu.0\n", s.success_length);
      out += "vllm:request_success_total" + labels(r, ",finished_reason=\"abort\"") + strprintf(" %llu.0\n", s.aborted);
    }
    auto histogram = [&](const char* name, const char* help, Histogram RankStats::*member) {
      header(name, "histogram", help);
      for (auto& [r, s] : stats_) {
        const Histogram& h = s.*member;
        for (std::size_t i = 0; i < h.bounds.size(); ++i) {
          out += strprintf("%s_bucket", name) + labels(r, strprintf(",le=\"%g\"", h.bounds[i])) +
                 strprintf(" %llu.0\n", h.counts[i]);
        }
        out += strprintf("%s_bucket", name) + labels(r, ",le=\"+Inf\"") + strprintf(" %llu.0\n", h.count);
        out += strprintf("%s_sum", name) + labels(r) + strprintf(" %.6f\n", h.sum);
        out += strprintf("%s_count", name) + labels(r) + strprintf(" %llu.0\n", h.count);
      }
    };
    histogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", &RankStats::e2e);
    histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", &RankStats::ttft);
    header("vllm:cache_config_info", "gauge", "Information of the LLMEngine CacheConfig.");
    out += strprintf("vllm:cache_config_info{engine=\"%d\",max_model_len=\"%lld\"} 1.0\n", cfg_.local_ranks.front(),
                     cfg_.max_model_len);
    res.set_content(out, "text/plain; version=0.0.4; charset=utf-8");
  }

  // The data-parallel rank that serves a request: the router's
  // X-data-parallel-rank header, else this process's --data-parallel-rank,
  // else its first local rank (0 for a plain `vllm serve`).
  bool resolve_rank(const http::Request& req, int& rank, std::string& error) const {
    if (!req.has_header("X-data-parallel-rank")) {
      rank = cfg_.local_ranks.front();
      return true;
    }
    std::string v = req.get_header_value("X-data-parallel-rank");
    auto r = ixfake::parse_int(v, 0, 1023);
    if (!r) {
      error = "X-data-parallel-rank: '" + v + "' is not a data-parallel rank";
      return false;
    }
    if (std::find(cfg_.local_ranks.begin(), cfg_.local_ranks.end(), *r) == cfg_.local_ranks.end()) {
      error = strprintf("data_parallel_rank %lld is out of range [%d, %d]", *r, cfg_.local_ranks.front(),
                        cfg_.local_ranks.back());
      return false;
    }
    rank = static_cast<int>(*r);
    return true;
  }

  struct Call {
    bool chat = false;
    int rank = 0;
    std::string id;
    std::string model;
    std::int64_t created = 0;
    Generation gen;
    bool include_usage = true;
    double t0 = 0;
  };

  void write_usage(JsonWriter& w, const Generation& g) const {
    int completion = static_cast<int>(g.tokens.size());
    w.Key("usage");
    w.StartObject();
    w.Key("prompt_tokens");
    w.Int(g.prompt_tokens);
    w.Key("total_tokens");
    w.Int(g.prompt_tokens + completion);
    w.Key("completion_tokens");
    w.Int(completion);
    w.Key("prompt_tokens_details");
    w.Null();
    w.EndObject();
  }

  void write_head(JsonWriter& w, const Call& c, bool chunk) const {
    w.Key("id");
    w.String(c.id.c_str());
    w.Key("object");
    w.String(c.chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion");
    w.Key("created");
    w.Int64(c.created);
    w.Key("model");
    w.String(c.model.c_str());
  }

  std::string full_response(const Call& c) const {
    std::string text;
    for (const auto& t : c.gen.tokens) text += t;
    rapidjson::StringBuffer sb;
    JsonWriter w(sb);
    w.StartObject();
    write_head(w, c, false);
    w.Key("choices");
    w.StartArray();
    w.StartObject();
    w.Key("index");
    w.Int(0);
    if (c.chat) {
      w.Key("message");
      w.StartObject();
      w.Key("role");
      w.String("assistant");
      w.Key("content");
      w.String(text.c_str());
      w.Key("reasoning_content");
      w.Null();
      w.Key("tool_calls");
      w.StartArray();
      w.EndArray();
      w.EndObject();
    } else {
      w.Key("text");
      w.String(text.c_str());
    }
    w.Key("logprobs");
    w.Null();
    w.Key("finish_reason");
    w.String(c.gen.finish_reason.c_str());
    w.Key("stop_reason");
    w.Null();
    w.EndObject();
    w.EndArray();
    write_usage(w, c.gen);
    w.Key("served_by_rank");
    w.Int(c.rank);
    w.EndObject();
    return sb.GetString();
  }

  // One SSE chunk: a delta (role and/or content, finish reason) or, with
  // usage_only, the final usage chunk with no choices.
  std::string chunk(const Call& c, const char* role, const std::string* content, const char* finish,
                    bool usage_only) const {
    rapidjson::StringBuffer sb;
    JsonWriter w(sb);
    w.StartObject();
    write_head(w, c, true);
    w.Key("choices");
    w.StartArray();
    if (!usage_only) {
      w.StartObject();
      w.Key("index");
      w.Int(0);
      if (c.chat) {
        w.Key("delta");
        w.StartObject();
        if (role != nullptr) {
          w.Key("role");
          w.String(role);
        }
        if (content != nullptr) {
          w.Key("content");
          w.String(content->c_str());
        }
        w.EndObject();
      } else {
        w.Key("text");
        w.String(content != nullptr ? content->c_str() : "");
      }
      w.Key("logprobs");
      w.Null();
      w.Key("finish_reason");
      if (finish != nullptr) {
        w.String(finish);
      } else {
        w.Null();
      }
      w.EndObject();
    }
    w.EndArray();
    if (usage_only) write_usage(w, c.gen);
    w.Key("served_by_rank");
    w.Int(c.rank);
    w.EndObject();
    return "data: " + std::string(sb.GetString()) + "\n\n";
  }

  void finish_stats(const Call& c, double ttft, bool ok) {
    std::lock_guard<std::mutex> lock(stats_mutex_);
    RankStats& s = stats_[c.rank];
    s.running -= 1;
    if (!ok) {
      ++s.aborted;
      return;
    }
    s.prompt_tokens += static_cast<unsigned long long>(c.gen.prompt_tokens);
    s.generation_tokens += c.gen.tokens.size();
    (c.gen.finish_reason == "stop" ? s.success_stop : s.success_length) += 1;
    s.e2e.observe(now_s() - c.t0);
    s.ttft.observe(ttft);
  }

  // Extracts the prompt text (for the deterministic answer) and its token
  // count; returns an error message, empty on success.
  static std::string read_prompt(const rapidjson::Document& doc, bool chat, std::string& text, int& tokens) {
    tokens = 0;
    if (chat) {
      if (!doc.HasMember("messages") || !doc["messages"].IsArray() || doc["messages"].Empty()) {
        return "'messages' must be a non-empty array";
      }
      for (const auto& m : doc["messages"].GetArray()) {
        if (!m.IsObject() || !m.HasMember("role") || !m["role"].IsString()) {
          return "each message must be an object with a string 'role'";
        }
        text += m["role"].GetString();
        text += ": ";
        if (m.HasMember("content") && m["content"].IsString()) {
          text += m["content"].GetString();
        } else if (m.HasMember("content") && m["content"].IsArray()) {
          for (const auto& part : m["content"].GetArray()) {
            if (part.IsObject() && part.HasMember("text") && part["text"].IsString()) text += part["text"].GetString();
          }
        }
        text += "\n";
        tokens += 3;
      }
      tokens += count_words(text);
      return {};
    }
    if (!doc.HasMember("prompt")) return "'prompt' is required";
    const auto& p = doc["prompt"];
    if (p.IsString()) {
      text = p.GetString();
      tokens = count_words(text);
      return {};
    }
    if (p.IsArray() && !p.Empty()) {
      for (const auto& e : p.GetArray()) {
        if (e.IsString()) {
          text += e.GetString();
          tokens += count_words(e.GetString());
        } else if (e.IsInt()) {
          text += std::to_string(e.GetInt()) + " ";
          tokens += 1;
        } else {
          return "'prompt' must be a string, an array of strings or an array of token ids";
        }
      }
      return {};
    }
    return "'prompt' must be a string, an array of strings or an array of token ids";
  }

  void completion(const http::Request& req, http::Response& res, bool chat) {
    Call c;
    c.chat = chat;
    c.t0 = now_s();
    std::string error;
    if (!resolve_rank(req, c.rank, error)) {
      json_error(res, 400, error, "BadRequestError");
      return;
    }
    res.set_header("X-Served-By-Rank", std::to_string(c.rank));
    rapidjson::Document doc;
    doc.Parse(req.body.c_str(), req.body.size());
    if (doc.HasParseError() || !doc.IsObject()) {
      json_error(res, 400, "the request body must be a JSON object", "BadRequestError");
      return;
    }
    c.model = cfg_.served_names.front();
    if (doc.HasMember("model") && !doc["model"].IsNull()) {
      if (!doc["model"].IsString()) {
        json_error(res, 400, "'model' must be a string", "BadRequestError");
        return;
      }
      std::string m = doc["model"].GetString();
      if (std::find(cfg_.served_names.begin(), cfg_.served_names.end(), m) == cfg_.served_names.end()) {
        json_error(res, 404, "The model `" + m + "` does not exist.", "NotFoundError");
        return;
      }
      c.model = m;
    }
    int max_tokens = 16;
    for (const char* key : {"max_tokens", "max_completion_tokens"}) {
      if (!doc.HasMember(key) || doc[key].IsNull()) continue;
      if (!doc[key].IsInt() || doc[key].GetInt() < 1) {
        json_error(res, 400, std::string("'") + key + "' must be a positive integer", "BadRequestError");
        return;
      }
      max_tokens = doc[key].GetInt();
    }
    bool stream = false;
    if (doc.HasMember("stream") && !doc["stream"].IsNull()) {
      if (!doc["stream"].IsBool()) {
        json_error(res, 400, "'stream' must be a boolean", "BadRequestError");
        return;
      }
      stream = doc["stream"].GetBool();
    }
    std::string prompt;
    int prompt_tokens = 0;
    if (std::string e = read_prompt(doc, chat, prompt, prompt_tokens); !e.empty()) {
      json_error(res, 400, e, "BadRequestError");
      return;
    }
    c.gen = generate(prompt, prompt_tokens, max_tokens);
    c.id = strprintf("%s-%d-%llu", chat ? "chatcmpl" : "cmpl", static_cast<int>(::getpid()),
                     static_cast<unsigned long long>(next_id_.fetch_add(1)));
    c.created = static_cast<std::int64_t>(std::time(nullptr));
    {
      std::lock_guard<std::mutex> lock(stats_mutex_);
      stats_[c.rank].running += 1;
    }
    if (!stream) {
      ixfake::sleep_s(cfg_.token_delay_s * static_cast<double>(c.gen.tokens.size()));
      res.set_content(full_response(c), "application/json");
      finish_stats(c, now_s() - c.t0, true);
      return;
    }
    auto state = std::make_shared<std::pair<Call, bool>>(c, false);  // call, finished
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream",
        [this, state](std::size_t, http::DataSink& sink) {
          const Call& call = state->first;
          auto send = [&](const std::string& frame) { return sink.write(frame.data(), frame.size()); };
          std::string empty;
          if (!send(chunk(call, "assistant", call.chat ? &empty : nullptr, nullptr, false))) return false;
          double ttft = -1;
          for (std::size_t i = 0; i < call.gen.tokens.size(); ++i) {
            ixfake::sleep_s(cfg_.token_delay_s);
            bool last = i + 1 == call.gen.tokens.size();
            if (!send(chunk(call, nullptr, &call.gen.tokens[i], last ? call.gen.finish_reason.c_str() : nullptr,
                            false))) {
              return false;
            }
            if (ttft < 0) ttft = now_s() - call.t0;
          }
          if (call.gen.tokens.empty() &&
              !send(chunk(call, nullptr, nullptr, call.gen.finish_reason.c_str(), false))) {
            return false;
          }
          if (!send(chunk(call, nullptr, nullptr, nullptr, true))) return false;
          if (!send("data: [DONE]\n\n")) return false;
          state->second = true;
          finish_stats(call, ttft < 0 ? now_s() - call.t0 : ttft, true);
          sink.done();
          return true;
        },
        [this, state](bool) {
          if (!state->second) finish_stats(state->first, 0, false);
        });
  }

  Config cfg_;
  std::mutex stats_mutex_;
  std::map<int, RankStats> stats_;
  std::atomic<unsigned long long> next_id_{1};
};

void fault_loop(Engine& engine, double ready_at) {
  const Config& cfg = engine.cfg();
  struct Event {
    double at;
    int kind;  // 0 crash, 1 exit0, 2 hang
  };
  std::vector<Event> events;
  if (cfg.crash_engine_after_s) events.push_back({ready_at + *cfg.crash_engine_after_s, 0});
  if (cfg.exit0_after_s) events.push_back({ready_at + *cfg.exit0_after_s, 1});
  if (cfg.hang_after_s) events.push_back({ready_at + *cfg.hang_after_s, 2});
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.at < b.at; });
  for (const auto& e : events) {
    ixfake::sleep_s(e.at - now_s());
    if (e.kind == 0) {
      std::lock_guard<std::mutex> lock(g_children_mutex);
      for (const auto& c : g_children) {
        if (c.rank != cfg.crash_rank || !c.alive) continue;
        logf("fault FAKE_VLLM_CRASH_ENGINE_AFTER_S: crashing EngineCore_DP%d (pid %d)", c.rank,
             static_cast<int>(c.pid));
        ::kill(c.pid, SIGUSR1);
      }
    } else if (e.kind == 1) {
      shutdown_and_exit(0, "fault FAKE_VLLM_EXIT0_AFTER_S: API server exits with status 0");
    } else {
      logf("fault FAKE_VLLM_HANG_AFTER_S: the API server stops answering (the process stays alive)");
      engine.hang.store(true);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  ::signal(SIGPIPE, SIG_IGN);
  ixfake::set_log_tag("vllm");
  Config cfg = parse_config(argc, argv);

  struct stat st {};
  if (::stat(cfg.record_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    std::fprintf(stderr, "vllm (fake): FAKE_VLLM_RECORD_DIR '%s' is not a directory\n", cfg.record_dir.c_str());
    return 1;
  }

  // Every thread inherits this mask; signals are taken with sigwait.
  sigset_t set = ixfake::handled_signals();
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);

  int port = cfg.port;
  g_reservation_fd = reserve_port(cfg, port);

  pid_t self = ::getpid();
  for (int rank : cfg.local_ranks) {
    pid_t pid = ::fork();
    if (pid < 0) {
      logf("ERROR: fork failed: %s", std::strerror(errno));
      shutdown_and_exit(1, "cannot start engine cores");
    }
    if (pid == 0) engine_core_main(rank, self);
    std::lock_guard<std::mutex> lock(g_children_mutex);
    g_children.push_back({rank, pid, true});
  }
  std::thread(signal_loop).detach();

  std::string record_path = cfg.record_dir + "/vllm-" + std::to_string(self) + ".json";
  if (std::string err = ixfake::write_file_atomic(record_path, record_json(cfg)); !err.empty()) {
    std::fprintf(stderr, "vllm (fake): cannot write the argv record: %s\n", err.c_str());
    shutdown_and_exit(1, "cannot write the argv record " + err);
  }

  std::string ranks;
  for (int r : cfg.local_ranks) ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
  logf("vLLM API server version %s (fake): serving %s as '%s' on %s:%d, data-parallel size %d, local ranks [%s]",
       kVersion, cfg.model_path.c_str(), cfg.served_names.front().c_str(), cfg.host.c_str(), port, cfg.dp_size,
       ranks.c_str());
  logf("argv and environment recorded in %s", record_path.c_str());
  if (!cfg.fault_only_if_arg.empty()) {
    logf("FAKE_VLLM_FAULT_ONLY_IF_ARG='%s': fault switches %s", cfg.fault_only_if_arg.c_str(),
         cfg.faults_active ? "apply (an argument matches)" : "ignored (no argument matches)");
  }

  if (cfg.never_ready) {
    logf("fault FAKE_VLLM_NEVER_READY: the engines never finish loading; the port is never listened on");
    for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
  }
  logf("waiting for engine cores to load the model (%.3f s)", cfg.start_delay_s);
  ixfake::sleep_s(cfg.start_delay_s);

  Engine engine(cfg);
  http::Server svr;
  svr.set_socket_options(ixfake::server_socket_options);
  engine.install(svr);

  ::close(g_reservation_fd);
  g_reservation_fd = -1;
  if (std::string err = svr.bind_to_port(cfg.host, port); !err.empty()) {
    logf("ERROR: cannot listen on %s:%d: %s", cfg.host.c_str(), port, err.c_str());
    std::fprintf(stderr, "ERROR: cannot listen on %s:%d\n", cfg.host.c_str(), port);
    shutdown_and_exit(1, "bind failed");
  }
  double ready_at = now_s();
  logf("Starting vLLM API server on http://%s:%d", cfg.host.c_str(), port);
  logf("Application startup complete.");
  std::thread([&engine, ready_at] { fault_loop(engine, ready_at); }).detach();
  svr.listen_after_bind();
  shutdown_and_exit(0, "server stopped");
}
