// Where one `vllm serve` process sits in a (possibly multi-node) engine: its
// role (a plain server, the head of a multi-node engine, or a headless
// node), the data-parallel ranks it runs and answers for, and the head's
// address. The rules are vLLM's (create_engine_config and serve.py's
// run_headless), plus a few the fake adds where vLLM would only hang or fail
// late (tests/fakes/README.md, "Multi-node"). Pure: unit-tested in
// vllm_layout_test.cc.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace ixfake::vllm {

// vLLM's defaults (ParallelConfig): the data-parallel RPC port, and the
// torch.distributed master of a TP/PP engine across nodes.
inline constexpr const char* kDefaultHeadAddress = "127.0.0.1";
inline constexpr int kDefaultDataParallelRpcPort = 29550;
inline constexpr int kDefaultMasterPort = 29501;

// The command-line flags that decide the layout, as given (nullopt: absent).
struct LayoutFlags {
  int dp_size = 1;                        // --data-parallel-size, -dp
  std::optional<int> dp_rank;             // --data-parallel-rank, -dpn (external load balancing)
  std::optional<int> dp_size_local;       // --data-parallel-size-local, -dpl (0 allowed: API only)
  std::optional<int> dp_start_rank;       // --data-parallel-start-rank, -dpr
  std::optional<std::string> dp_address;  // --data-parallel-address, -dpa
  std::optional<int> dp_rpc_port;         // --data-parallel-rpc-port, -dpp
  bool headless = false;                  // --headless
  bool hybrid_lb = false;                 // --data-parallel-hybrid-lb, -dph
  std::optional<int> api_server_count;    // --api-server-count, -asc
  int nnodes = 1;                         // --nnodes, -n
  int node_rank = 0;                      // --node-rank, -r
  std::optional<std::string> master_addr; // --master-addr
  std::optional<int> master_port;         // --master-port
  int tp = 1;                             // --tensor-parallel-size, -tp
  int pp = 1;                             // --pipeline-parallel-size, -pp
};

// kSingle: one process is the whole engine (today's fake, also a hybrid or
// external load-balancing rank). kHead: serves the API and waits for the
// other nodes to join. kHeadless: runs EngineCores, joins the head, serves
// nothing.
enum class Role { kSingle, kHead, kHeadless };

// How the engine crosses nodes: not at all, by data-parallel ranks (the
// head's --data-parallel-address:--data-parallel-rpc-port), or by node rank
// for tensor/pipeline parallelism (--master-addr:--master-port).
enum class Span { kNone, kDataParallel, kNodes };

// The decided layout. Invariants after plan_layout: every rank is in
// [0, dp_size); local_ranks is empty only for a head with
// --data-parallel-size-local 0; served_ranks is empty exactly for kHeadless;
// span is kNone exactly for kSingle; join_host/join_port are set unless kNone.
struct Layout {
  Role role = Role::kSingle;
  Span span = Span::kNone;
  int dp_size = 1;
  int nnodes = 1, node_rank = 0;  // span kNodes: this node of how many
  int tp = 1, pp = 1;             // tensor- and pipeline-parallel sizes
  std::vector<int> local_ranks;   // one EngineCore_DP<r> each, on this node
  std::vector<int> served_ranks;  // the ranks the API answers for (the head: all of them)
  std::string join_host;          // the head binds it, a headless node connects to it
  int join_port = 0;
  std::string join_flags;         // the flags that name it, for messages
};

// Decides the layout as vLLM would. Returns the error (argparse style, the
// text after "vllm serve: error: "), empty on success.
std::string plan_layout(const LayoutFlags& flags, Layout& out);

// first..first+count-1 (none when count <= 0): a node's block of ranks.
std::vector<int> rank_block(int first, int count);

// "8-15" for 8..15, "3" for one, "1,4-5" for gaps (the project's id lists,
// ix::FormatIdList); ranks must be sorted.
std::string rank_ranges(const std::vector<int>& ranks);

// "data-parallel ranks 8-15 of 16" / "node rank 1 of 2": what this process is
// in log lines.
std::string describe_layout(const Layout& layout);

}  // namespace ixfake::vllm
