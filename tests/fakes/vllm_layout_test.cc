#include "vllm_layout.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ixfake::vllm {
namespace {

// The layout of `flags`; fails the test when they are refused.
Layout Plan(const LayoutFlags& flags) {
  Layout l;
  std::string err = plan_layout(flags, l);
  EXPECT_EQ(err, "");
  return l;
}

// The error for `flags` ("" when accepted).
std::string Error(const LayoutFlags& flags) {
  Layout l;
  return plan_layout(flags, l);
}

LayoutFlags Dp(int size, std::optional<int> local, std::optional<int> start, bool headless) {
  LayoutFlags f;
  f.dp_size = size;
  f.dp_size_local = local;
  f.dp_start_rank = start;
  f.headless = headless;
  return f;
}

TEST(VllmLayout, OneNodeIsTheWholeEngine) {
  Layout l = Plan(Dp(4, std::nullopt, std::nullopt, false));
  EXPECT_EQ(l.role, Role::kSingle);
  EXPECT_EQ(l.span, Span::kNone);
  EXPECT_EQ(l.local_ranks, rank_block(0, 4));
  EXPECT_EQ(l.served_ranks, rank_block(0, 4));
  EXPECT_EQ(Plan(Dp(8, 8, std::nullopt, false)).role, Role::kSingle);
}

TEST(VllmLayout, DataParallelHeadAndHeadlessNodes) {
  LayoutFlags head = Dp(16, 8, std::nullopt, false);
  head.dp_address = "10.0.0.1";
  head.dp_rpc_port = 13345;
  Layout h = Plan(head);
  EXPECT_EQ(h.role, Role::kHead);
  EXPECT_EQ(h.span, Span::kDataParallel);
  EXPECT_EQ(h.local_ranks, rank_block(0, 8));
  EXPECT_EQ(h.served_ranks, rank_block(0, 16));  // the head answers for every rank
  EXPECT_EQ(h.join_host, "10.0.0.1");
  EXPECT_EQ(h.join_port, 13345);

  LayoutFlags node = head;
  node.dp_start_rank = 8;
  node.headless = true;
  Layout n = Plan(node);
  EXPECT_EQ(n.role, Role::kHeadless);
  EXPECT_EQ(n.local_ranks, rank_block(8, 8));
  EXPECT_TRUE(n.served_ranks.empty());
  EXPECT_EQ(n.join_host, "10.0.0.1");
  EXPECT_EQ(n.join_port, 13345);
  EXPECT_EQ(describe_layout(n), "data-parallel ranks 8-15 of 16");
}

TEST(VllmLayout, DefaultsAreVllms) {
  Layout h = Plan(Dp(4, 2, std::nullopt, false));
  EXPECT_EQ(h.join_host, "127.0.0.1");
  EXPECT_EQ(h.join_port, 29550);
  LayoutFlags f = Dp(4, 2, std::nullopt, false);
  f.master_addr = "10.0.0.9";  // the data-parallel address falls back on --master-addr
  EXPECT_EQ(Plan(f).join_host, "10.0.0.9");
  LayoutFlags tp;
  tp.nnodes = 2;
  tp.tp = 8;
  tp.pp = 2;
  Layout t = Plan(tp);
  EXPECT_EQ(t.join_host, "127.0.0.1");
  EXPECT_EQ(t.join_port, 29501);
}

TEST(VllmLayout, HeadWithoutEnginesAndAHeadlessNodeWithAllOfThem) {
  Layout h = Plan(Dp(4, 0, std::nullopt, false));  // vLLM's docs: the API server alone on node 0
  EXPECT_EQ(h.role, Role::kHead);
  EXPECT_TRUE(h.local_ranks.empty());
  EXPECT_EQ(h.served_ranks, rank_block(0, 4));
  Layout n = Plan(Dp(4, 4, std::nullopt, true));
  EXPECT_EQ(n.role, Role::kHeadless);
  EXPECT_EQ(n.local_ranks, rank_block(0, 4));
}

TEST(VllmLayout, HybridAndExternalRanksStayAlone) {
  Layout hybrid = Plan(Dp(8, 2, 4, false));  // a start rank on a node with its own API
  EXPECT_EQ(hybrid.role, Role::kSingle);
  EXPECT_EQ(hybrid.local_ranks, rank_block(4, 2));
  LayoutFlags ext = Dp(4, std::nullopt, std::nullopt, false);
  ext.dp_rank = 2;
  Layout e = Plan(ext);
  EXPECT_EQ(e.role, Role::kSingle);
  EXPECT_EQ(e.served_ranks, std::vector<int>{2});
}

TEST(VllmLayout, TensorAndPipelineParallelAcrossNodes) {
  LayoutFlags f;
  f.nnodes = 2;
  f.tp = 8;
  f.pp = 2;
  f.master_addr = "10.0.0.1";
  f.master_port = 29600;
  Layout head = Plan(f);
  EXPECT_EQ(head.role, Role::kHead);
  EXPECT_EQ(head.span, Span::kNodes);
  EXPECT_EQ(head.served_ranks, std::vector<int>{0});
  EXPECT_EQ(head.join_port, 29600);
  f.node_rank = 1;
  f.headless = true;
  Layout node = Plan(f);
  EXPECT_EQ(node.role, Role::kHeadless);
  EXPECT_EQ(node.local_ranks, std::vector<int>{0});
  EXPECT_EQ(node.join_host, "10.0.0.1");
  EXPECT_EQ(describe_layout(node), "node rank 1 of 2 (tensor-parallel 8 x pipeline-parallel 2)");
}

TEST(VllmLayout, DataParallelRanksInferredFromTheNodeRank) {
  LayoutFlags f;
  f.dp_size = 16;
  f.nnodes = 2;
  f.node_rank = 1;
  f.headless = true;
  Layout n = Plan(f);
  EXPECT_EQ(n.role, Role::kHeadless);
  EXPECT_EQ(n.span, Span::kDataParallel);
  EXPECT_EQ(n.local_ranks, rank_block(8, 8));
  f.node_rank = 0;
  f.headless = false;
  Layout h = Plan(f);
  EXPECT_EQ(h.role, Role::kHead);
  EXPECT_EQ(h.local_ranks, rank_block(0, 8));
}

TEST(VllmLayout, InconsistentCombinationsAreRefused) {
  EXPECT_NE(Error(Dp(16, 8, std::nullopt, true)).find("needs --data-parallel-start-rank"), std::string::npos);
  EXPECT_NE(Error(Dp(16, 8, 4, true)).find("--data-parallel-start-rank 4 is not a multiple of "
                                           "--data-parallel-size-local 8"),
            std::string::npos);
  EXPECT_NE(Error(Dp(16, 8, 16, true)).find("local data-parallel ranks 16..23 do not fit --data-parallel-size 16"),
            std::string::npos);
  EXPECT_NE(Error(Dp(4, 8, std::nullopt, false)).find("do not fit"), std::string::npos);
  EXPECT_EQ(Error(Dp(4, 0, std::nullopt, true)), "data_parallel_size_local must be > 0 in headless mode");
  LayoutFlags hybrid = Dp(4, 2, 2, true);
  hybrid.hybrid_lb = true;
  EXPECT_EQ(Error(hybrid), "data_parallel_hybrid_lb is not applicable in headless mode");
  LayoutFlags api = Dp(4, 2, 2, true);
  api.api_server_count = 2;
  EXPECT_NE(Error(api).find("cannot be used with --headless"), std::string::npos);
  LayoutFlags ext = Dp(4, std::nullopt, 2, false);
  ext.dp_rank = 2;
  EXPECT_NE(Error(ext).find("more than one data parallel load balancing mode"), std::string::npos);
}

TEST(VllmLayout, InconsistentNodeFlagsAreRefused) {
  LayoutFlags f;
  f.nnodes = 2;
  f.tp = 8;
  f.pp = 2;
  f.node_rank = 2;
  EXPECT_EQ(Error(f), "node_rank=2 must be less than nnodes=2.");
  f.node_rank = 1;
  EXPECT_NE(Error(f).find("--node-rank 1 needs --headless"), std::string::npos);
  f.node_rank = 0;
  f.headless = true;
  EXPECT_NE(Error(f).find("--headless with --node-rank 0"), std::string::npos);
  LayoutFlags odd;
  odd.nnodes = 3;
  odd.tp = 8;
  EXPECT_EQ(Error(odd), "world_size=8 must be divisible by nnodes=3.");
  LayoutFlags spanning;  // DP groups of 16 GPUs over 2 nodes of 8: not emulated
  spanning.dp_size = 2;
  spanning.nnodes = 4;
  spanning.tp = 16;
  EXPECT_NE(Error(spanning).find("not emulated"), std::string::npos);
}

TEST(VllmLayout, RankBlock) {
  EXPECT_EQ(rank_block(8, 3), (std::vector<int>{8, 9, 10}));
  EXPECT_TRUE(rank_block(4, 0).empty());
}

TEST(VllmLayout, RankRanges) {
  EXPECT_EQ(rank_ranges({}), "");
  EXPECT_EQ(rank_ranges({3}), "3");
  EXPECT_EQ(rank_ranges(rank_block(8, 8)), "8-15");
  EXPECT_EQ(rank_ranges({1, 4, 5, 7}), "1,4-5,7");
}

}  // namespace
}  // namespace ixfake::vllm
