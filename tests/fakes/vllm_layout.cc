#include "vllm_layout.h"

#include <algorithm>
#include <numeric>

#include "core/node/topology.h"
#include "fake_common.h"

namespace ixfake::vllm {
namespace {

void set_single(Layout& out, std::vector<int> ranks) {
  out.role = Role::kSingle;
  out.span = Span::kNone;
  out.local_ranks = ranks;
  out.served_ranks = std::move(ranks);
}

// The head's data-parallel address: --data-parallel-address, else
// --master-addr, else 127.0.0.1 (vLLM's data_parallel_master_ip).
void set_dp_join(const LayoutFlags& f, Layout& out) {
  out.span = Span::kDataParallel;
  out.join_host = f.dp_address.value_or(f.master_addr.value_or(kDefaultHeadAddress));
  out.join_port = f.dp_rpc_port.value_or(kDefaultDataParallelRpcPort);
  out.join_flags = "--data-parallel-address/--data-parallel-rpc-port";
}

// --data-parallel-rank: one rank of an externally balanced engine.
std::string plan_external_rank(const LayoutFlags& f, Layout& out) {
  int rank = *f.dp_rank;
  if (f.headless || f.nnodes > 1) {
    return "--data-parallel-rank with --headless or --nnodes is not emulated by the fake";
  }
  if (f.dp_start_rank || f.hybrid_lb) {
    return "Cannot use more than one data parallel load balancing mode. Choose one of: "
           "--data-parallel-external-lb (or --data-parallel-rank), --data-parallel-hybrid-lb (or "
           "--data-parallel-start-rank).";
  }
  if (f.dp_size_local && *f.dp_size_local != 1) {
    return "data_parallel_size_local must be 1 or None when data_parallel_rank is set";
  }
  if (rank >= f.dp_size) {
    return strprintf("--data-parallel-rank %d is out of range for --data-parallel-size %d", rank, f.dp_size);
  }
  set_single(out, {rank});
  return {};
}

// A node of a data-parallel engine: ranks start..start+local-1 (start and
// local as given, or inferred from --node-rank; start_given says whether the
// node named its start rank one way or the other).
std::string plan_data_parallel(const LayoutFlags& f, std::optional<int> local, std::optional<int> start,
                               bool start_given, Layout& out) {
  const int n = f.dp_size;
  if (!local && !start && !f.headless) {
    if (f.hybrid_lb) return "data_parallel_size_local must be set to use data_parallel_hybrid_lb.";
    set_single(out, rank_block(0, n));
    return {};
  }
  const int first = start.value_or(0);
  const int count = local.value_or(n - first);
  if (f.headless && count == 0) return "data_parallel_size_local must be > 0 in headless mode";
  if (count > 0 && first % count != 0) {
    return strprintf("--data-parallel-start-rank %d is not a multiple of --data-parallel-size-local %d (each node "
                     "runs a block of that many ranks)", first, count);
  }
  if (count < 0 || first + count > n) {
    return strprintf("local data-parallel ranks %d..%d do not fit --data-parallel-size %d", first, first + count - 1,
                     n);
  }
  if (f.headless) {
    if (count < n && !start_given) {
      return strprintf("--headless with --data-parallel-size-local %d < --data-parallel-size %d needs "
                       "--data-parallel-start-rank (the first of this node's ranks; the head runs ranks from 0)",
                       count, n);
    }
    out.role = Role::kHeadless;
    out.local_ranks = rank_block(first, count);
    set_dp_join(f, out);
    return {};
  }
  if (first > 0 || f.hybrid_lb || count == n) {
    // Hybrid load balancing (a start rank on a node with its own API), or
    // every rank here: no other node to wait for.
    set_single(out, rank_block(first, count));
    return {};
  }
  out.role = Role::kHead;
  out.local_ranks = rank_block(0, count);
  out.served_ranks = rank_block(0, n);
  set_dp_join(f, out);
  return {};
}

// --nnodes > 1: tensor/pipeline parallel across nodes (one data-parallel
// rank), or data-parallel ranks whose node is inferred from --node-rank.
std::string plan_across_nodes(const LayoutFlags& f, Layout& out) {
  const int world = f.dp_size * f.pp * f.tp;
  const int within_dp = f.pp * f.tp;
  const int local_world = world / f.nnodes;
  if (f.dp_size > 1) {
    if (within_dp > local_world || local_world % within_dp != 0) {
      return strprintf("--data-parallel-size %d with --nnodes %d and a tensor x pipeline group of %d GPUs spanning "
                       "nodes is not emulated by the fake", f.dp_size, f.nnodes, within_dp);
    }
    const int inferred_local = local_world / within_dp;
    const int inferred_start = f.node_rank * inferred_local;
    // vLLM: data_parallel_rank = data_parallel_start_rank or the inferred one.
    std::optional<int> start = f.dp_start_rank.value_or(0) > 0 ? *f.dp_start_rank : inferred_start;
    return plan_data_parallel(f, f.dp_size_local.value_or(inferred_local), start, true, out);
  }
  if (f.node_rank > 0 && !f.headless) {
    return strprintf("--node-rank %d needs --headless: only node rank 0 serves the API (the other nodes run workers "
                     "for it)", f.node_rank);
  }
  if (f.node_rank == 0 && f.headless) {
    return "--headless with --node-rank 0: node rank 0 is the head and serves the API";
  }
  out.span = Span::kNodes;
  out.role = f.node_rank == 0 ? Role::kHead : Role::kHeadless;
  out.local_ranks = {0};
  if (out.role == Role::kHead) out.served_ranks = {0};
  out.join_host = f.master_addr.value_or(kDefaultHeadAddress);
  out.join_port = f.master_port.value_or(kDefaultMasterPort);
  out.join_flags = "--master-addr/--master-port";
  return {};
}

}  // namespace

std::string plan_layout(const LayoutFlags& f, Layout& out) {
  out = Layout{};
  out.dp_size = f.dp_size;
  out.nnodes = f.nnodes;
  out.node_rank = f.node_rank;
  out.tp = f.tp;
  out.pp = f.pp;
  if (f.node_rank >= f.nnodes) return strprintf("node_rank=%d must be less than nnodes=%d.", f.node_rank, f.nnodes);
  const long long world = 1LL * f.dp_size * f.pp * f.tp;
  if (world % f.nnodes != 0) {
    return strprintf("world_size=%lld must be divisible by nnodes=%d.", world, f.nnodes);
  }
  if (f.headless && f.hybrid_lb) return "data_parallel_hybrid_lb is not applicable in headless mode";
  if (f.headless && f.api_server_count.value_or(0) > 0) {
    return strprintf("--api-server-count=%d cannot be used with --headless (no API servers are started in headless "
                     "mode).", *f.api_server_count);
  }
  if (f.dp_rank) return plan_external_rank(f, out);
  if (f.nnodes > 1) return plan_across_nodes(f, out);
  return plan_data_parallel(f, f.dp_size_local, f.dp_start_rank, f.dp_start_rank.has_value(), out);
}

std::vector<int> rank_block(int first, int count) {
  std::vector<int> out(static_cast<std::size_t>(std::max(count, 0)));
  std::iota(out.begin(), out.end(), first);
  return out;
}

std::string rank_ranges(const std::vector<int>& ranks) { return ix::FormatIdList(ranks); }

std::string describe_layout(const Layout& l) {
  if (l.span == Span::kNodes) {
    return strprintf("node rank %d of %d (tensor-parallel %d x pipeline-parallel %d)", l.node_rank, l.nnodes, l.tp,
                     l.pp);
  }
  const std::vector<int>& ranks = l.role == Role::kHeadless ? l.local_ranks : l.served_ranks;
  return strprintf("data-parallel ranks %s of %d", rank_ranges(ranks).c_str(), l.dp_size);
}

}  // namespace ixfake::vllm
