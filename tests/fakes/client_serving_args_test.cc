#include "client_serving_args.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ixfake::client {
namespace {

using Args = std::vector<std::string>;

// InferenceX's run_benchmark_serving command, less "python3 SCRIPT", with
// every optional flag it may add.
Args inferencex_command() {
  return {"--model", "/models/Llama-3.3-70B", "--backend", "vllm", "--base-url", "http://0.0.0.0:8888",
          "--dataset-name", "random", "--random-input-len", "1024", "--random-output-len", "512",
          "--random-range-ratio", "0.8", "--num-prompts", "40", "--max-concurrency", "4", "--request-rate", "inf",
          "--ignore-eos", "--profile", "--save-result", "--num-warmups", "8", "--percentile-metrics",
          "ttft,tpot,itl,e2el", "--result-dir", "/tmp/res", "--result-filename", "run1.json", "--endpoint",
          "/v1/completions", "--use-chat-template", "--dsv4", "--trust-remote-code", "--tokenizer", "/tok",
          "--tokenizer-mode", "deepseek_v4"};
}

// The error of parsing `args`, "" when they parse.
std::string error_of(const Args& args) {
  ServingParse p = parse_serving_args(args);
  EXPECT_EQ(p.config.has_value(), p.error.empty());
  return p.error;
}

Args with(Args args, const Args& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

const Args kMinimal = {"--model", "m", "--dataset-name", "random"};

TEST(ServingArgs, TakesInferenceXsWholeCommand) {
  ServingParse p = parse_serving_args(inferencex_command());
  ASSERT_TRUE(p.config) << p.error;
  const Config& c = *p.config;
  ASSERT_TRUE(c.serving);
  const ServingOptions& s = *c.serving;
  EXPECT_EQ(c.model, "/models/Llama-3.3-70B");
  EXPECT_EQ(s.backend, "vllm");
  EXPECT_FALSE(s.chat);
  EXPECT_EQ(c.url.host, "0.0.0.0");
  EXPECT_EQ(c.url.port, 8888);
  EXPECT_EQ(c.url.base_path, "");
  EXPECT_EQ(s.path, "/v1/completions");
  ASSERT_TRUE(c.lengths);
  EXPECT_EQ(c.lengths->isl, 1024);
  EXPECT_EQ(c.lengths->osl, 512);
  EXPECT_DOUBLE_EQ(c.lengths->range_ratio, 0.8);
  EXPECT_EQ(c.lengths->seed, 0u);
  EXPECT_EQ(c.sessions, 40);
  EXPECT_EQ(c.turns, 1);
  EXPECT_EQ(c.requests(), 40);
  EXPECT_EQ(c.concurrency, 4);
  EXPECT_EQ(s.max_concurrency, 4);
  EXPECT_EQ(s.warmups, 8);
  EXPECT_TRUE(s.ignore_eos);
  EXPECT_TRUE(s.profile);
  EXPECT_TRUE(s.save_result);
  EXPECT_TRUE(s.use_chat_template);
  EXPECT_TRUE(s.dsv4);
  EXPECT_TRUE(s.trust_remote_code);
  EXPECT_EQ(s.tokenizer_id, "/tok");
  EXPECT_EQ(s.tokenizer_mode, "deepseek_v4");
  EXPECT_EQ(s.percentile_metrics, (std::vector<std::string>{"ttft", "tpot", "itl", "e2el"}));
  EXPECT_EQ(c.out, "/tmp/res/run1.json");
  EXPECT_TRUE(c.stream);
  EXPECT_TRUE(c.keep_going);
}

TEST(ServingArgs, DefaultsAreBenchmarkServingPys) {
  ServingParse p = parse_serving_args(kMinimal);
  ASSERT_TRUE(p.config) << p.error;
  const Config& c = *p.config;
  const ServingOptions& s = *c.serving;
  EXPECT_EQ(s.backend, "vllm");
  EXPECT_EQ(s.path, "/v1/completions");
  EXPECT_EQ(c.endpoint, "http://127.0.0.1:8000");
  EXPECT_EQ(c.requests(), 1000);
  EXPECT_EQ(c.lengths->isl, 1024);
  EXPECT_EQ(c.lengths->osl, 128);
  EXPECT_DOUBLE_EQ(c.lengths->range_ratio, 1.0);
  EXPECT_EQ(c.lengths->seed, 0u);
  EXPECT_FALSE(s.max_concurrency);
  EXPECT_EQ(c.concurrency, 1000);  // no limit: every request at once
  EXPECT_EQ(s.warmups, 0);
  EXPECT_FALSE(s.ignore_eos);
  EXPECT_FALSE(s.save_result);
  EXPECT_EQ(s.tokenizer_id, "m");
  EXPECT_EQ(s.tokenizer_mode, "auto");
  EXPECT_EQ(c.out, "");
}

TEST(ServingArgs, ArgparseSyntax) {
  ServingParse p = parse_serving_args(with(kMinimal, {"--num-prompts=7", "--seed", "42", "--num-prompts", "9"}));
  ASSERT_TRUE(p.config) << p.error;
  EXPECT_EQ(p.config->requests(), 9);  // the last one wins
  EXPECT_EQ(p.config->lengths->seed, 42u);
  EXPECT_TRUE(parse_serving_args({"--help"}).help);
  EXPECT_TRUE(parse_serving_args(with(kMinimal, {"-h"})).help);
}

TEST(ServingArgs, UnknownFlagsAreNamed) {
  EXPECT_EQ(error_of(with(kMinimal, {"--num-prompt", "3"})), "unrecognized arguments: --num-prompt");
  EXPECT_EQ(error_of(with(kMinimal, {"--host=x"})), "unrecognized arguments: --host");
  EXPECT_EQ(error_of(with(kMinimal, {"--save-detailed"})), "unrecognized arguments: --save-detailed");
  EXPECT_EQ(error_of(with(kMinimal, {"stray"})), "unrecognized arguments: stray");
  EXPECT_EQ(error_of(with(kMinimal, {"--num-prompts"})), "argument --num-prompts: expected one argument");
  EXPECT_EQ(error_of(with(kMinimal, {"--ignore-eos=1"})), "argument --ignore-eos: ignored explicit argument '1'");
}

TEST(ServingArgs, BadValuesAreUsageErrors) {
  EXPECT_EQ(error_of({"--dataset-name", "random"}), "the following arguments are required: --model");
  EXPECT_NE(error_of({"--model", "m"}).find("Unknown dataset: sharegpt"), std::string::npos);
  EXPECT_NE(error_of(with(kMinimal, {"--dataset-name", "sharegpt"})).find("invalid choice: 'sharegpt'"),
            std::string::npos);
  EXPECT_NE(error_of(with(kMinimal, {"--num-prompts", "x"})).find("--num-prompts: 'x'"), std::string::npos);
  EXPECT_NE(error_of(with(kMinimal, {"--num-prompts", "0"})).find("--num-prompts"), std::string::npos);
  EXPECT_NE(error_of(with(kMinimal, {"--max-concurrency", "0"})).find("--max-concurrency"), std::string::npos);
  EXPECT_NE(error_of(with(kMinimal, {"--num-warmups", "-1"})).find("--num-warmups"), std::string::npos);
  EXPECT_NE(error_of(with(kMinimal, {"--random-range-ratio", "1.5"})).find("--random-range-ratio"),
            std::string::npos);
  EXPECT_NE(error_of(with(kMinimal, {"--request-rate", "10"})).find("only inf"), std::string::npos);
  EXPECT_EQ(error_of(with(kMinimal, {"--request-rate", "Infinity"})), "");
  EXPECT_NE(error_of(with(kMinimal, {"--backend", "nope"})).find("invalid choice: 'nope'"), std::string::npos);
  EXPECT_NE(error_of(with(kMinimal, {"--backend", "tgi"})).find("'tgi'"), std::string::npos);
  EXPECT_NE(error_of(with(kMinimal, {"--tokenizer-mode", "fast"})).find("invalid choice: 'fast'"), std::string::npos);
  EXPECT_EQ(error_of(with(kMinimal, {"--dsv4"})), "--dsv4 requires --use-chat-template to be set.");
  EXPECT_NE(error_of(with(kMinimal, {"--base-url", "ftp://x"})).find("--base-url"), std::string::npos);
  EXPECT_NE(error_of(with(kMinimal, {"--endpoint", "/v1/models"})).find("--endpoint"), std::string::npos);
}

TEST(ServingArgs, ChatBackendNeedsTheChatEndpoint) {
  EXPECT_NE(error_of(with(kMinimal, {"--backend", "openai-chat"})).find("chat/completions"), std::string::npos);
  ServingParse p = parse_serving_args(with(kMinimal, {"--backend", "openai-chat", "--endpoint", "/v1/chat/completions"}));
  ASSERT_TRUE(p.config) << p.error;
  EXPECT_TRUE(p.config->serving->chat);
  EXPECT_EQ(p.config->serving->path, "/v1/chat/completions");
}

TEST(ServingArgs, PercentileMetricsKeepTheirOrder) {
  ServingParse p = parse_serving_args(with(kMinimal, {"--percentile-metrics", "e2el,bogus,ttft"}));
  ASSERT_TRUE(p.config) << p.error;
  EXPECT_EQ(p.config->serving->percentile_metrics, (std::vector<std::string>{"ttft", "e2el"}));
}

TEST(ServingArgs, ResultPath) {
  // Without --save-result nothing is saved; --result-filename then is unused.
  EXPECT_EQ(parse_serving_args(with(kMinimal, {"--result-filename", "a.json"})).config->out, "");
  EXPECT_EQ(parse_serving_args(with(kMinimal, {"--save-result", "--result-filename", "a.json"})).config->out,
            "a.json");
  EXPECT_EQ(
      parse_serving_args(with(kMinimal, {"--save-result", "--result-dir", "/d", "--result-filename", "/abs.json"}))
          .config->out,
      "/abs.json");
  ServingParse p = parse_serving_args({"--model", "/models/org/Model-X", "--dataset-name", "random", "--save-result",
                                       "--max-concurrency", "8", "--result-dir", "/d"});
  ASSERT_TRUE(p.config) << p.error;
  EXPECT_EQ(p.config->out, "");
  EXPECT_EQ(default_result_path(*p.config, "20260101-000000"), "/d/vllm-infqps-concurrency8-Model-X-20260101-000000.json");
  p.config->serving->max_concurrency.reset();
  p.config->serving->result_dir.clear();
  EXPECT_EQ(default_result_path(*p.config, "D"), "vllm-infqps-Model-X-D.json");
}

}  // namespace
}  // namespace ixfake::client
