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

TEST(VllmArgs, DataParallelLayouts) {
  EXPECT_EQ(Parse({"serve", "/m"}).local_ranks, std::vector<int>{0});
  EXPECT_EQ(Parse({"serve", "/m", "-dp", "4"}).local_ranks, (std::vector<int>{0, 1, 2, 3}));
  Config rank = Parse({"serve", "/m", "--data-parallel-size", "4", "--data-parallel-rank", "2"});
  EXPECT_EQ(rank.local_ranks, std::vector<int>{2});
  EXPECT_EQ(rank.dp_rank, 2);
  Config hybrid = Parse({"serve", "/m", "-dp", "8", "--data-parallel-start-rank", "4", "--data-parallel-size-local", "2"});
  EXPECT_EQ(hybrid.local_ranks, (std::vector<int>{4, 5}));
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

}  // namespace
}  // namespace ixfake::vllm
