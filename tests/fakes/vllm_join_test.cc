#include "vllm_join.h"

#include <gtest/gtest.h>

#include <string>

namespace ixfake::vllm {
namespace {

Layout DpHead(int size, int local) {
  return Layout{.role = Role::kHead, .span = Span::kDataParallel, .dp_size = size,
                .local_ranks = rank_block(0, local), .served_ranks = rank_block(0, size)};
}

Layout NodeHead(int nnodes, int tp, int pp) {
  return Layout{.role = Role::kHead, .span = Span::kNodes, .nnodes = nnodes, .tp = tp, .pp = pp,
                .local_ranks = {0}, .served_ranks = {0}};
}

Hello DpHello(int size, int start, int local) {
  return Hello{.span = Span::kDataParallel, .dp_size = size, .start_rank = start, .local = local, .pid = 42};
}

Hello NodeHello(int nnodes, int rank, int tp, int pp) {
  return Hello{.span = Span::kNodes, .nnodes = nnodes, .node_rank = rank, .tp = tp, .pp = pp, .pid = 7};
}

TEST(VllmJoin, HelloLinesAreTheDocumentedBytes) {
  EXPECT_EQ(hello_line(DpHello(16, 8, 8)), "IXFAKE-VLLM/1 HELLO dp-size=16 start-rank=8 local=8 tp=1 pp=1 pid=42");
  EXPECT_EQ(hello_line(NodeHello(2, 1, 8, 2)), "IXFAKE-VLLM/1 HELLO nnodes=2 node-rank=1 tp=8 pp=2 pid=7");
}

TEST(VllmJoin, HelloRoundTrips) {
  std::string error;
  auto dp = parse_hello(hello_line(DpHello(16, 8, 8)), error);
  ASSERT_TRUE(dp) << error;
  EXPECT_EQ(dp->span, Span::kDataParallel);
  EXPECT_EQ(dp->dp_size, 16);
  EXPECT_EQ(dp->start_rank, 8);
  EXPECT_EQ(dp->local, 8);
  EXPECT_EQ(dp->pid, 42);
  auto node = parse_hello(hello_line(NodeHello(3, 2, 8, 3)), error);
  ASSERT_TRUE(node) << error;
  EXPECT_EQ(node->span, Span::kNodes);
  EXPECT_EQ(node->nnodes, 3);
  EXPECT_EQ(node->node_rank, 2);
  EXPECT_EQ(node->pp, 3);
}

TEST(VllmJoin, HelloForALayout) {
  Layout l;
  l.role = Role::kHeadless;
  l.span = Span::kDataParallel;
  l.dp_size = 16;
  l.local_ranks = {8, 9, 10, 11, 12, 13, 14, 15};
  Hello h = hello_for(l, 99);
  EXPECT_EQ(h.start_rank, 8);
  EXPECT_EQ(h.local, 8);
  EXPECT_EQ(describe_hello(h), "node with data-parallel ranks 8-15");
}

TEST(VllmJoin, BadHellosAreRefusedWithTheReason) {
  std::string error;
  EXPECT_FALSE(parse_hello("GET / HTTP/1.1", error));
  EXPECT_NE(error.find("not a hello"), std::string::npos);
  EXPECT_FALSE(parse_hello("IXFAKE-VLLM/1 HELLO dp-size=4 start-rank=2 local=2 tp=1 pp=1", error));
  EXPECT_NE(error.find("exactly"), std::string::npos);
  EXPECT_FALSE(parse_hello("IXFAKE-VLLM/1 HELLO dp-size=4 start-rank=2 local=0 tp=1 pp=1 pid=1", error));
  EXPECT_NE(error.find("field local"), std::string::npos);
  EXPECT_FALSE(parse_hello("IXFAKE-VLLM/1 HELLO dp-size=4 dp-size=4 local=2 tp=1 pp=1 pid=1", error));
  EXPECT_NE(error.find("given twice"), std::string::npos);
  EXPECT_FALSE(parse_hello("IXFAKE-VLLM/1 HELLO nnodes=2 node-rank=1 tp=8 pp=2 pid=1 color=red", error));
  EXPECT_NE(error.find("unknown field 'color=red'"), std::string::npos);
  EXPECT_FALSE(parse_hello("IXFAKE-VLLM/1 HELLO nnodes=2 node-rank=0 tp=8 pp=2 pid=1", error));  // 0 is the head
}

TEST(VllmJoin, DataParallelHeadWaitsForEveryOtherRank) {
  JoinTable t(DpHead(16, 4));
  EXPECT_FALSE(t.complete());
  EXPECT_EQ(t.missing(), "data-parallel ranks 4-15");
  EXPECT_EQ(t.admit(DpHello(16, 4, 4)), "");
  EXPECT_EQ(t.admit(DpHello(16, 8, 4)), "");
  t.mark_ready(DpHello(16, 8, 4));
  EXPECT_EQ(t.missing(), "data-parallel ranks 4-7,12-15");
  t.mark_ready(DpHello(16, 4, 4));
  EXPECT_EQ(t.admit(DpHello(16, 12, 4)), "");
  EXPECT_FALSE(t.complete());
  t.mark_ready(DpHello(16, 12, 4));
  EXPECT_TRUE(t.complete());
  EXPECT_EQ(t.missing(), "");
}

TEST(VllmJoin, DataParallelRefusals) {
  JoinTable t(DpHead(16, 8));
  EXPECT_EQ(t.admit(DpHello(8, 8, 8)), "dp-size=8, but the head has --data-parallel-size 16");
  EXPECT_EQ(t.admit(DpHello(16, 0, 8)), "data-parallel rank 0 is not one the head waits for");
  EXPECT_EQ(t.admit(DpHello(16, 8, 8)), "");
  EXPECT_EQ(t.admit(DpHello(16, 8, 8)), "data-parallel rank 8 has already joined");
  EXPECT_NE(t.admit(NodeHello(2, 1, 1, 1)).find("node-rank hello"), std::string::npos);
  Hello tp = DpHello(16, 8, 8);
  tp.tp = 2;
  JoinTable fresh(DpHead(16, 8));
  EXPECT_NE(fresh.admit(tp).find("--tensor-parallel-size 1"), std::string::npos);
}

TEST(VllmJoin, NodeHeadWaitsForNodeRanks) {
  JoinTable t(NodeHead(3, 8, 2));
  EXPECT_EQ(t.missing(), "node ranks 1-2");
  EXPECT_EQ(t.admit(NodeHello(2, 1, 8, 2)), "nnodes=2, but the head has --nnodes 3");
  EXPECT_EQ(t.admit(NodeHello(3, 2, 8, 2)), "");
  EXPECT_EQ(t.admit(NodeHello(3, 2, 8, 2)), "node rank 2 has already joined");
  t.mark_ready(NodeHello(3, 2, 8, 2));
  EXPECT_EQ(t.missing(), "node rank 1");
  t.mark_ready(NodeHello(3, 1, 8, 2));  // not admitted: does not count
  EXPECT_FALSE(t.complete());
  EXPECT_EQ(t.admit(NodeHello(3, 1, 8, 2)), "");
  t.mark_ready(NodeHello(3, 1, 8, 2));
  EXPECT_TRUE(t.complete());
}

}  // namespace
}  // namespace ixfake::vllm
