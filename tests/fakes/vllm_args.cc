#include "vllm_args.h"

#include <rapidjson/document.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string_view>

#include "fake_common.h"
#include "vllm_mooncake.h"

namespace ixfake::vllm {
namespace {

constexpr const char* kHelpLine = "usage: vllm serve MODEL [flags...]   (fake vLLM for tests; see tests/fakes/README.md)\n";

[[noreturn]] void usage_error(const std::string& message) {
  usage_exit("usage: vllm serve [model_tag] [options]\nvllm serve: error: %s\n", message.c_str());
}

// The single value of a flag, or nullopt when absent; a flag given without
// a value is an argparse error.
std::optional<std::string> flag_value(const LooseArgs& args, std::string_view name) {
  const auto* f = args.last(name);
  if (f == nullptr) return std::nullopt;
  if (f->values.empty()) usage_error("argument " + std::string(name) + ": expected one argument");
  return f->values.front();
}

std::optional<int> int_flag(const LooseArgs& args, std::initializer_list<const char*> names, long long min,
                            long long max) {
  for (const char* name : names) {
    if (auto v = flag_value(args, name)) {
      auto n = parse_int(*v, min, max);
      if (!n) {
        usage_error(strprintf("argument %s: invalid int value: '%s' (expected %lld-%lld)", name, v->c_str(), min,
                              max));
      }
      return static_cast<int>(*n);
    }
  }
  return std::nullopt;
}

// --version, --help, and the one subcommand: prints and exits unless this is
// `vllm serve ...` without --help.
void handle_subcommand(int argc, char** argv) {
  if (argc >= 2 && (std::strcmp(argv[1], "--version") == 0 || std::strcmp(argv[1], "-v") == 0)) {
    std::printf("%s\n", kVersion);
    std::exit(0);
  }
  if (argc >= 2 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
    std::printf("%s", kHelpLine);
    std::exit(0);
  }
  if (argc < 2 || std::strcmp(argv[1], "serve") != 0) {
    usage_exit("usage: vllm serve MODEL [flags...]\nvllm (fake): only the 'serve' subcommand exists\n");
  }
  if (std::any_of(argv + 2, argv + argc, [](const char* a) { return std::strcmp(a, "--help") == 0; })) {
    std::printf("%s", kHelpLine);
    std::exit(0);
  }
}

// MODEL_PATH (the one positional, else --model) and --served-model-name.
void read_model(const LooseArgs& args, Config& cfg) {
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
}

// A store_true flag (--headless): present or not; a value is an error, as
// argparse's "ignored explicit argument".
bool bool_flag(const LooseArgs& args, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    const auto* f = args.last(name);
    if (f == nullptr) continue;
    if (!f->values.empty()) usage_error(std::string("argument ") + name + ": ignored explicit argument '" +
                                        f->values.front() + "'");
    return true;
  }
  return false;
}

std::optional<std::string> string_flag(const LooseArgs& args, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (auto v = flag_value(args, name)) return v;
  }
  return std::nullopt;
}

// The flags of the data-parallel and multi-node layout (vllm_layout.h).
LayoutFlags read_layout_flags(const LooseArgs& args) {
  LayoutFlags f;
  if (auto n = int_flag(args, {"--data-parallel-size", "-dp"}, 1, 1024)) f.dp_size = *n;
  f.dp_rank = int_flag(args, {"--data-parallel-rank", "-dpn"}, 0, 1023);
  f.dp_size_local = int_flag(args, {"--data-parallel-size-local", "-dpl"}, 0, 1024);
  f.dp_start_rank = int_flag(args, {"--data-parallel-start-rank", "-dpr"}, 0, 1023);
  f.dp_rpc_port = int_flag(args, {"--data-parallel-rpc-port", "-dpp"}, 1, 65535);
  f.dp_address = string_flag(args, {"--data-parallel-address", "-dpa"});
  f.headless = bool_flag(args, {"--headless"});
  f.hybrid_lb = bool_flag(args, {"--data-parallel-hybrid-lb", "-dph"});
  f.api_server_count = int_flag(args, {"--api-server-count", "-asc"}, 0, 1024);
  if (auto n = int_flag(args, {"--nnodes", "-n"}, 1, 1024)) f.nnodes = *n;
  if (auto r = int_flag(args, {"--node-rank", "-r"}, 0, 1023)) f.node_rank = *r;
  f.master_addr = string_flag(args, {"--master-addr"});
  f.master_port = int_flag(args, {"--master-port"}, 1, 65535);
  if (auto n = int_flag(args, {"--tensor-parallel-size", "-tp"}, 1, 1024)) f.tp = *n;
  if (auto n = int_flag(args, {"--pipeline-parallel-size", "-pp"}, 1, 1024)) f.pp = *n;
  for (const auto& host : {f.dp_address, f.master_addr}) {
    if (host && host->empty()) usage_error("an empty --data-parallel-address or --master-addr");
  }
  return f;
}

// The data-parallel layout: which ranks this process runs and answers for,
// and whether it heads or joins a multi-node engine (vllm_layout.h).
void read_data_parallel(const LooseArgs& args, Config& cfg) {
  LayoutFlags f = read_layout_flags(args);
  cfg.dp_size = f.dp_size;
  cfg.dp_rank = f.dp_rank;
  if (std::string err = plan_layout(f, cfg.layout); !err.empty()) usage_error(err);
}

// JSON-valued flags (--speculative-config, --compilation-config, ...): vLLM
// parses them with json.loads, so a value that looks like JSON must be JSON.
// A value that starts with a quote was quoted for a shell that never ran.
void check_config_flags(const LooseArgs& args) {
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
}

// The Mooncake store's config and master, as the real connector needs them
// (vllm_mooncake.h): any problem stops the engine. The tier holds this
// worker's global segment unless FAKE_VLLM_MOONCAKE_BYTES sizes it.
void join_store(KvCacheConfig& kv, const Switches& sw) {
  MooncakeStoreConfig store;
  if (std::string err = join_mooncake_store(store, 2.0); !err.empty()) {
    std::fprintf(stderr, "%s\n", err.c_str());
    std::exit(1);
  }
  if (sw.mooncake_bytes) return;
  kv.cpu_blocks = store.segment_bytes / kv.bytes_per_block;
  if (kv.cpu_blocks < 1) {
    std::fprintf(stderr, "the Mooncake global_segment_size (%lld bytes) is less than one KV block\n", store.segment_bytes);
    std::exit(1);
  }
}

// The KV cache's flags (vllm_kv_config.h) with the switches that size it;
// a configuration vLLM would refuse is a usage error.
KvCacheConfig read_kv_cache(const LooseArgs& args, const Switches& sw) {
  KvFlags f;
  if (auto n = int_flag(args, {"--block-size"}, 1, 4096)) f.block_size = *n;
  if (auto n = int_flag(args, {"--num-gpu-blocks-override"}, 1, 1LL << 30)) f.gpu_blocks = *n;
  f.kv_transfer = flag_value(args, "--kv-transfer-config");
  // --[no-]enable-prefix-caching is argparse's BooleanOptionalAction: the last one wins.
  bool_flag(args, {"--enable-prefix-caching"});
  bool_flag(args, {"--no-enable-prefix-caching"});
  for (const auto& flag : args.flags) {
    if (flag.name == "--enable-prefix-caching") f.no_prefix_caching = false;
    if (flag.name == "--no-enable-prefix-caching") f.no_prefix_caching = true;
  }
  f.prompt_tokens_details = bool_flag(args, {"--enable-prompt-tokens-details"});
  f.env_gpu_blocks = sw.num_gpu_blocks;
  f.env_mooncake_bytes = sw.mooncake_bytes;
  KvCacheConfig kv;
  if (std::string err = make_kv_config(f, kv); !err.empty()) usage_error(err);
  if (kv.tier == TierKind::kMooncakeStore) join_store(kv, sw);
  return kv;
}

}  // namespace

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
  auto n = parse_int(digits, 1, 1LL << 40);
  if (!n) return std::nullopt;
  return *n * mult;
}

Config parse_config(int argc, char** argv) {
  Config cfg;
  cfg.argv.assign(argv, argv + argc);
  handle_subcommand(argc, argv);
  std::vector<std::string> rest(argv + 2, argv + argc);
  // vLLM's nargs='+' flags (one NUMA node and one CPU list per GPU worker,
  // vllm-project/vllm#38635), and argparse's store_true flags the fake
  // reads or may meet before the model.
  LooseArgs args = parse_loose(rest, {"--served-model-name", "--numa-bind-nodes", "--numa-bind-cpus"},
                               {"--headless", "--numa-bind", "--data-parallel-hybrid-lb", "-dph", "--no-data-parallel-hybrid-lb",
                                "--data-parallel-external-lb", "-dpe", "--no-data-parallel-external-lb",
                                "--enable-expert-parallel", "-ep", "--no-enable-expert-parallel",
                                "--enable-prefix-caching", "--no-enable-prefix-caching",
                                "--enable-prompt-tokens-details"});
  read_model(args, cfg);
  if (auto h = flag_value(args, "--host")) cfg.host = *h;
  if (auto p = int_flag(args, {"--port"}, 0, 65535)) cfg.port = *p;
  read_data_parallel(args, cfg);
  if (auto v = flag_value(args, "--max-model-len")) {
    if (*v != "-1" && *v != "auto") {
      auto n = parse_human_int(*v);
      if (!n) usage_error("argument --max-model-len: invalid value: '" + *v + "'");
      cfg.max_model_len = *n;
    }
  }
  check_config_flags(args);
  cfg.switches = parse_switches(cfg.argv, cfg.layout.local_ranks, cfg.dp_size);
  cfg.kv = read_kv_cache(args, cfg.switches);
  return cfg;
}

}  // namespace ixfake::vllm
