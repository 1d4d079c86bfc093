// Recipe: how one model/SKU/framework is served, loaded from recipes/*.yaml
// (schema in docs/RECIPES.md). A recipe holds command templates for the
// engine and, optionally, a router; the client environment; host-memory
// needs; and the arms (tp4, tep4, dep4, ...) that vary them.
//
// Invariants after a successful load: every `${NAME}` in every template an
// arm uses names something that exists for that arm (a builtin, a recipe
// variable, an arm variable, one of the arm's ports or the CUDA-graph capture
// variable; DP_RANK and the per-GPU names only where they have a value);
// every fragment the engine splices is defined by every arm; arm variables
// do not reference themselves in a cycle; tp x pp x dp == gpus x nodes
// (gpus per node); pp > 1 only with dp == 1; across nodes (nodes > 1) the DP
// ranks (pp == 1) or the pipeline stages (dp == 1) divide evenly over the
// nodes, the layout is `engine`, and every fragment in others_fragments is
// one of the arm's fragments; rank ports only in rank-process arms; step
// ports and others_fragments only across nodes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/base/result.h"
#include "core/recipe/template.h"

namespace ix {

// Where something was written, for messages: "file:line:col" and field path.
struct SourceRef {
  std::string where;
  std::string field;
  std::string Describe() const { return where + ": field '" + field + "'"; }
};

// A template together with where it was written.
struct LocatedTemplate {
  Template tmpl;
  SourceRef ref;
};

// One element of an argv template. kText renders to exactly one argument;
// kSplice inserts the arm's fragment of that name (zero or more arguments);
// kWhen inserts `args` only when recipe variable `when` is non-empty.
struct ArgTemplate {
  enum class Kind { kText, kSplice, kWhen };
  Kind kind = Kind::kText;
  LocatedTemplate text;                 // kText
  std::string fragment;                 // kSplice
  std::string when;                     // kWhen
  std::vector<LocatedTemplate> args;    // kWhen
  SourceRef ref;
};

// NAME=template, in written order.
struct EnvTemplate {
  std::string name;
  LocatedTemplate value;
};

// An element of a list that may repeat per rank or per GPU: kText renders
// once; kPerRank once per DP rank (DP_RANK and the rank ports set to that
// rank's); kPerGpu once per GPU of the step (GPU_NUMA and GPU_CPUS set to
// that GPU's placement; engine.numa_flags only).
struct ListArg {
  enum class Kind { kText, kPerRank, kPerGpu };
  Kind kind = Kind::kText;
  LocatedTemplate text;
};

// A readiness check: an HTTP GET that must answer 200 (kHttpOk), or answer
// 200 with an OpenAI model list holding at least one model (kModelsNonEmpty),
// or (kConnected, never written in a recipe: the check of an engine on a
// node after the head) the process tree holding an established TCP
// connection to the host in `url` (an address, no port), or
// (kTcpListening, `tcp_listening: HOST:PORT`, for servers that speak no
// HTTP such as the Mooncake master) a TCP connect to HOST:PORT succeeding.
struct ReadinessTemplate {
  enum class Kind { kHttpOk, kModelsNonEmpty, kConnected, kTcpListening };
  Kind kind;
  LocatedTemplate url;
};

// A process the step runs (the engine, the router).
struct ProcessTemplate {
  std::string name;
  std::string log;  // file name in the step's result directory
  // router only: the version of the program the image ships (vllm-router
  // "0.1.14"), reported in results as ROUTER_METADATA; "" = not declared.
  std::string version;
  std::vector<ArgTemplate> argv;
  std::vector<EnvTemplate> env;
  std::vector<ReadinessTemplate> readiness;
  // engine only: flags that let one engine process place each of its GPU
  // workers on the GPU's NUMA node (vLLM's --numa-bind-nodes ...). Appended
  // at step time when the ranks of a single engine process span NUMA nodes.
  std::vector<ListArg> numa_flags;
};

// A recipe variable: a default, an optional eval-only value, and whether
// `--set NAME=VALUE` may override it. Values are literal (no references).
struct RecipeVariable {
  std::string name;
  std::string value;
  std::optional<std::string> eval_only_value;
  std::string doc;
};

// The CUDA-graph capture size rule: per-rank batch = CONC x multiplier / DP
// (must be whole), capture = smallest power of two >= batch x
// tokens_per_request, capped at `max`. The multiplier is per arm.
struct CaptureRule {
  std::string variable;
  int64_t tokens_per_request = 1;
  int64_t max = 0;
};

// Host DRAM a step needs, per DP rank, per GPU or once per step. Pinned
// memory (registered with CUDA, e.g. Engram's offloaded tables) counts
// against RLIMIT_MEMLOCK, so the plugin raises that limit for it.
struct HostMemoryNeed {
  enum class Per { kDpRank, kGpu, kStep };
  std::string name;
  Per per = Per::kStep;
  uint64_t bytes = 0;
  bool pinned = false;
  std::string doc;
};
const char* PerName(HostMemoryNeed::Per per);

// How the DP ranks of an arm run: kEngine, one engine process serving all
// ranks (vllm serve --data-parallel-size N; the InferenceX layout); or
// kRankProcess, one engine process per rank (vLLM external load balancing:
// --data-parallel-rank r, each on its own port, each bound to its GPU's
// NUMA node).
enum class DpLayout { kEngine, kRankProcess };
const char* DpLayoutName(DpLayout layout);

// An arm: one parallelism layout, on one node or across `nodes` nodes as
// one Slurm step (docs/MULTINODE.md). `gpus` is per node; tp x pp x dp ==
// gpus x nodes. Across nodes, `step_ports` are the ports every node must
// agree on (the head's front door, DP RPC or master port), taken from
// Slurm's reserved ports of the step, and `others_fragments` replace the
// fragments of the same name on the nodes after the head (--headless ...).
struct Arm {
  std::string name;
  int64_t gpus = 0, tp = 0, ep = 0, dp = 0;
  int64_t pp = 1;
  int64_t nodes = 1;
  std::vector<std::string> step_ports;
  std::vector<std::pair<std::string, std::vector<ListArg>>> others_fragments;
  bool router = false;
  DpLayout dp_layout = DpLayout::kEngine;
  // rank-process: ports leased once per rank; in a rank's engine (and in
  // per_rank items) the name is that rank's port, elsewhere rank 0's.
  std::vector<std::string> rank_ports;
  int64_t capture_batch_multiplier = 1;
  std::vector<std::string> ports;  // leased, in order
  std::vector<std::pair<std::string, LocatedTemplate>> vars;
  std::vector<std::pair<std::string, std::vector<ListArg>>> fragments;
  std::vector<EnvTemplate> engine_env;  // added to (or replacing) the engine's
  std::vector<EnvTemplate> client_env;  // added to (or replacing) the client's
  std::string where;
};

// A file a KV offload tier has written into the step's run directory
// before its servers and the engine start (the Mooncake config).
struct KvOffloadFile {
  std::string name;  // a plain file name
  LocatedTemplate text;
};

// A process a KV offload tier starts before the engine (the Mooncake
// master); stopped after the engine. argv holds kText and kWhen items only,
// the first kText (the program). `ports` are leased for the step like the
// arm's ports.
struct KvOffloadServer {
  std::string name;
  std::string log;  // file name in the step's result directory
  std::vector<ArgTemplate> argv;
  std::vector<EnvTemplate> env;
  std::vector<std::string> ports;
  std::vector<ReadinessTemplate> readiness;
};

// Host DRAM a tier adds, its size a template rendering to a byte count
// (an integer with an optional unit: 356000000000, ${KV_OFFLOAD_GB_PER_RANK}GB).
struct KvOffloadMemory {
  std::string name;
  HostMemoryNeed::Per per = HostMemoryNeed::Per::kStep;
  LocatedTemplate bytes;
  bool pinned = false;
  std::string doc;
};

// A KV offload tier the recipe serves (`kv_offload: NAME:`), selected by a
// config row's kv-offload-backend name (InferenceX: vllm-simple,
// mooncake), and what it adds to a plan (docs/RECIPES.md). Invariants:
// names are unique, lower-case and not "none"; engine_args hold kText and
// kWhen items only; file, server and memory names are unique in the tier;
// its vars, ports and the tier builtins collide with no name of any arm
// (checked per arm with the rest of its templates); `needs` lists the tier
// builtins its templates use, directly or through its vars.
struct KvOffloadTier {
  std::string name;
  std::string doc;
  std::vector<ArgTemplate> engine_args;  // appended to the engine argv
  std::vector<EnvTemplate> engine_env;   // added to (or replacing) the engine's
  std::vector<std::pair<std::string, LocatedTemplate>> vars;
  std::vector<KvOffloadFile> files;
  std::vector<KvOffloadServer> servers;
  std::vector<KvOffloadMemory> host_memory;
  std::vector<std::string> needs;
  std::string where;

  // The servers' ports, in order.
  std::vector<std::string> Ports() const;
  bool Needs(const std::string& builtin) const;
};

// What progress means for one kind of server under `hang:`: while a `busy`
// gauge is above zero the server must move a `progress` counter. The
// metrics are read from `metrics`: with `on_origin` a path ("/metrics") on
// the origin (scheme://host:port) of the process's first HTTP readiness URL
// (`metrics:`), else a full URL (`metrics_url:`). Invariants: busy is not
// empty; every metric name is a Prometheus name; the engine's progress is
// not empty (the router's may be: then it moves when the engines' does);
// per_label, when set, is a Prometheus label name whose values (vLLM's
// `engine`, one per DP rank) are judged apart.
struct HangServerTemplate {
  LocatedTemplate metrics;
  bool on_origin = false;
  std::vector<std::string> busy;
  std::vector<std::string> progress;
  std::string per_label;
};

// The recipe's `hang:` section: the default time without progress while
// busy after which a step counts as hung, and what progress is for its
// engine and router. Invariants: 1 <= after_s <= kMaxHangAfterS; at least
// one server is given; a router entry only in a recipe with a router.
struct HangPolicy {
  static constexpr int64_t kMaxHangAfterS = 86400;
  int64_t after_s = 0;
  std::optional<HangServerTemplate> engine;
  std::optional<HangServerTemplate> router;
  std::string where;
};

// A loaded recipe; its invariants are at the top of this file.
struct Recipe {
  std::string file;
  std::string name;
  std::string description;
  std::vector<std::string> serves;  // InferenceX config keys this recipe runs
  std::vector<RecipeVariable> variables;
  std::optional<CaptureRule> capture;
  std::vector<HostMemoryNeed> host_memory;
  ProcessTemplate engine;
  std::optional<ProcessTemplate> router;
  std::vector<EnvTemplate> client_env;
  std::vector<KvOffloadTier> kv_offload;
  std::optional<HangPolicy> hang;  // absent: no hang detection
  std::vector<Arm> arms;

  const Arm* FindArm(const std::string& name) const;
  const KvOffloadTier* FindKvOffload(const std::string& name) const;
  std::vector<std::string> ArmNames() const;
  const RecipeVariable* FindVariable(const std::string& name) const;
};

// Names every arm can use without declaring them. DP_RANK is the rank of
// the process being rendered (rank-process engines, per_rank items); "0"
// elsewhere is never rendered: the loader rejects DP_RANK there. NODE_RANK,
// NODES, HEAD_ADDR (127.0.0.1 on one node), DP_LOCAL (this node's DP ranks)
// and DP_START_RANK (its first) describe the node a plan is for; PP the
// pipeline stages.
const std::vector<std::string>& BuiltinVariables();
// Names only a KV offload tier's templates can use: TOTAL_CPU_DRAM_GB (the
// step's host DRAM budget), GPU_COUNT (the arm's GPUs: gpus x nodes),
// KV_OFFLOAD_BYTES_PER_RANK (TOTAL_CPU_DRAM_GB x 10^9 / GPU_COUNT),
// KV_OFFLOAD_GB_PER_RANK (TOTAL_CPU_DRAM_GB / GPU_COUNT), both integer
// divisions as InferenceX's launch script does them, KV_LAZY_OFFLOAD
// ("false" with DP attention, dp > 1, else "true") and RESULT_DIR (the step's
// result directory, where ix-stepd writes the tier's files, as InferenceX's
// launch script writes its Mooncake config).
const std::vector<std::string>& KvOffloadBuiltins();
// The names a per_gpu item of engine.numa_flags renders against: the GPU's
// NUMA node and its CPU share in list syntax ("0-15,64-79").
const std::vector<std::string>& PerGpuVariables();

Result<Recipe> LoadRecipeFile(const std::string& path);
Result<Recipe> LoadRecipeString(const std::string& text, const std::string& name);

// Recipe names available in `dir` (file stems of *.yaml), sorted.
std::vector<std::string> ListRecipes(const std::string& dir);
// Loads `<dir>/<name>.yaml`; an unknown or malformed name lists the choices.
Result<Recipe> LoadRecipeByName(const std::string& dir, const std::string& name);

}  // namespace ix
