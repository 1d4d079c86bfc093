#include "vllm_args.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ixfake::vllm {
namespace {

Config Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "vllm");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return parse_config(static_cast<int>(argv.size()), argv.data());
}

TEST(VllmArgs, HumanReadableIntegers) {
  EXPECT_EQ(parse_human_int("8192"), 8192);
  EXPECT_EQ(parse_human_int("1k"), 1000);
  EXPECT_EQ(parse_human_int("1K"), 1024);
  EXPECT_EQ(parse_human_int("1m"), 1000000);
  EXPECT_EQ(parse_human_int("1M"), 1048576);
  EXPECT_EQ(parse_human_int("2G"), 2147483648LL);
  EXPECT_FALSE(parse_human_int(""));
  EXPECT_FALSE(parse_human_int("k"));
  EXPECT_FALSE(parse_human_int("1x"));
  EXPECT_FALSE(parse_human_int("0"));
}

TEST(VllmArgs, ModelNamesPortAndLength) {
  Config c = Parse({"serve", "/models/m", "--port=9000", "--served-model-name", "a", "b", "--max_model_len", "1M"});
  EXPECT_EQ(c.model_path, "/models/m");
  EXPECT_EQ(c.served_names, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(c.port, 9000);
  EXPECT_EQ(c.host, "0.0.0.0");
  EXPECT_EQ(c.max_model_len, 1048576);
  EXPECT_EQ(c.argv.size(), 9u);
  Config d = Parse({"serve", "--model", "/m2", "--max-model-len", "auto"});
  EXPECT_EQ(d.served_names, std::vector<std::string>{"/m2"});
  EXPECT_EQ(d.max_model_len, 8192);
}

// vLLM's per-worker NUMA flags take one value per GPU worker (nargs='+'),
// as the plugin appends them when one engine's ranks span NUMA nodes.
TEST(VllmArgs, PerWorkerNumaFlagsTakeAValuePerWorker) {
  Config c = Parse({"serve", "/m", "-dp", "4", "--numa-bind", "--numa-bind-nodes", "0", "0", "1", "1",
                    "--numa-bind-cpus", "0-15", "16-31", "64-79", "80-95", "--port", "9001"});
  EXPECT_EQ(c.model_path, "/m");
  EXPECT_EQ(c.port, 9001);
  EXPECT_EQ(c.layout.local_ranks, (std::vector<int>{0, 1, 2, 3}));
}

TEST(VllmArgs, DataParallelLayouts) {
  EXPECT_EQ(Parse({"serve", "/m"}).layout.local_ranks, std::vector<int>{0});
  EXPECT_EQ(Parse({"serve", "/m", "-dp", "4"}).layout.local_ranks, (std::vector<int>{0, 1, 2, 3}));
  Config rank = Parse({"serve", "/m", "--data-parallel-size", "4", "--data-parallel-rank", "2"});
  EXPECT_EQ(rank.layout.local_ranks, std::vector<int>{2});
  EXPECT_EQ(rank.dp_rank, 2);
  Config hybrid = Parse({"serve", "/m", "-dp", "8", "--data-parallel-start-rank", "4", "--data-parallel-size-local", "2"});
  EXPECT_EQ(hybrid.layout.local_ranks, (std::vector<int>{4, 5}));
}

TEST(VllmArgs, MultiNodeFlagsAsVllmSpellsThem) {
  Config head = Parse({"serve", "/m", "--data-parallel-size", "16", "--data-parallel-size-local", "8",
                       "--data-parallel-address", "10.0.0.1", "--data-parallel-rpc-port", "13345"});
  EXPECT_EQ(head.layout.role, Role::kHead);
  EXPECT_EQ(head.layout.join_host, "10.0.0.1");
  EXPECT_EQ(head.layout.join_port, 13345);
  // --headless is a store_true flag: the model after it stays the positional.
  Config node = Parse({"serve", "--headless", "/m", "-dp", "16", "-dpl", "8", "-dpr", "8", "-dpa", "10.0.0.1",
                       "-dpp", "13345"});
  EXPECT_EQ(node.model_path, "/m");
  EXPECT_EQ(node.layout.role, Role::kHeadless);
  EXPECT_EQ(node.layout.local_ranks.front(), 8);
  Config tp = Parse({"serve", "/m", "--tensor-parallel-size", "8", "--pipeline-parallel-size", "2", "--nnodes", "2",
                     "--node-rank", "1", "--master-addr", "10.0.0.1", "--master-port", "29600", "--headless"});
  EXPECT_EQ(tp.layout.role, Role::kHeadless);
  EXPECT_EQ(tp.layout.span, Span::kNodes);
  EXPECT_EQ(tp.layout.join_port, 29600);
  Config short_flags = Parse({"serve", "/m", "-tp", "8", "-pp", "2", "-n", "2", "-r", "0"});
  EXPECT_EQ(short_flags.layout.role, Role::kHead);
  EXPECT_EQ(short_flags.layout.tp, 8);
}

TEST(VllmArgs, MultiNodeErrorsExit2NamingTheFlags) {
  EXPECT_EXIT(Parse({"serve", "/m", "-dp", "16", "-dpl", "8", "--headless"}), testing::ExitedWithCode(2),
              "vllm serve: error: --headless with --data-parallel-size-local 8 < --data-parallel-size 16 needs "
              "--data-parallel-start-rank");
  EXPECT_EXIT(Parse({"serve", "/m", "-dp", "16", "-dpl", "8", "-dpr", "4", "--headless"}), testing::ExitedWithCode(2),
              "is not a multiple of --data-parallel-size-local 8");
  EXPECT_EXIT(Parse({"serve", "/m", "-dp", "16", "-dpl", "8", "-dpr", "16", "--headless"}),
              testing::ExitedWithCode(2), "do not fit --data-parallel-size 16");
  EXPECT_EXIT(Parse({"serve", "/m", "-tp", "8", "--nnodes", "2", "--node-rank", "1"}), testing::ExitedWithCode(2),
              "--node-rank 1 needs --headless");
  EXPECT_EXIT(Parse({"serve", "/m", "--nnodes", "2", "--node-rank", "2"}), testing::ExitedWithCode(2),
              "node_rank=2 must be less than nnodes=2");
  EXPECT_EXIT(Parse({"serve", "/m", "--headless=yes"}), testing::ExitedWithCode(2),
              "argument --headless: ignored explicit argument 'yes'");
  EXPECT_EXIT(Parse({"serve", "/m", "--data-parallel-rpc-port", "0"}), testing::ExitedWithCode(2),
              "argument --data-parallel-rpc-port: invalid int value");
  EXPECT_EXIT(Parse({"serve", "/m", "--master-port", "70000"}), testing::ExitedWithCode(2),
              "argument --master-port: invalid int value");
}

TEST(VllmArgs, UsageErrorsExit2WithArgparseMessages) {
  EXPECT_EXIT(Parse({"serve"}), testing::ExitedWithCode(2), "the model is required");
  EXPECT_EXIT(Parse({"serve", "/m", "extra"}), testing::ExitedWithCode(2), "unrecognized arguments: extra");
  EXPECT_EXIT(Parse({"serve", "/m", "--port"}), testing::ExitedWithCode(2), "--port: expected one argument");
  EXPECT_EXIT(Parse({"serve", "/m", "-dp", "2", "--data-parallel-rank", "2"}), testing::ExitedWithCode(2),
              "out of range");
  EXPECT_EXIT(Parse({"serve", "/m", "--compilation-config", "{bad"}), testing::ExitedWithCode(2),
              "invalid loads value");
  EXPECT_EXIT(Parse({"serve", "/m", "--speculative-config", "'{}'"}), testing::ExitedWithCode(2), "shell quotes");
  EXPECT_EXIT(Parse({"run"}), testing::ExitedWithCode(2), "only the 'serve' subcommand");
}

TEST(VllmArgs, KvCacheFlags) {
  Config d = Parse({"serve", "/m"});
  EXPECT_EQ(d.kv.block_size, 16);
  EXPECT_EQ(d.kv.gpu_blocks, kDefaultGpuBlocks);
  EXPECT_TRUE(d.kv.prefix_caching);
  EXPECT_FALSE(d.kv.prompt_tokens_details);
  // The boolean flags never take the model as their value.
  Config c = Parse({"serve", "--enable-prefix-caching", "--no-enable-prefix-caching", "--enable-prompt-tokens-details",
                    "/m", "--block_size", "32", "--num-gpu-blocks-override", "100", "--kv-transfer-config",
                    R"({"kv_connector":"OffloadingConnector","kv_role":"kv_both",)"
                    R"("kv_connector_extra_config":{"cpu_bytes_to_use":33554432}})"});
  EXPECT_EQ(c.model_path, "/m");
  EXPECT_EQ(c.kv.block_size, 32);
  EXPECT_EQ(c.kv.gpu_blocks, 100);
  EXPECT_EQ(c.kv.gpu_tokens(), 3200);
  EXPECT_FALSE(c.kv.prefix_caching);  // the last of the pair wins
  EXPECT_TRUE(c.kv.prompt_tokens_details);
  EXPECT_EQ(c.kv.tier, TierKind::kCpuOffload);
  EXPECT_EQ(c.kv.cpu_blocks, 16);  // 32 MiB of 2 MiB blocks
  EXPECT_EXIT(Parse({"serve", "/m", "--kv-transfer-config", R"({"kv_connector":"NixlConnector"})"}),
              testing::ExitedWithCode(2), "Please specify kv_role");
  EXPECT_EXIT(Parse({"serve", "/m", "--block-size", "0"}), testing::ExitedWithCode(2), "--block-size");
}

}  // namespace
}  // namespace ixfake::vllm
