#include "vllm_generate.h"

#include <gtest/gtest.h>

#include <string>

namespace ixfake::vllm {
namespace {

rapidjson::Document Json(const char* text) {
  rapidjson::Document d;
  d.Parse(text);
  return d;
}

TEST(VllmGenerate, TheAnswerDependsOnlyOnThePromptAndMaxTokens) {
  Generation a = generate("hello world", 2, 16);
  Generation b = generate("hello world", 2, 16);
  EXPECT_EQ(a.tokens, b.tokens);
  ASSERT_GE(a.tokens.size(), 6u);
  ASSERT_LE(a.tokens.size(), 10u);
  EXPECT_EQ(a.finish_reason, "stop");
  EXPECT_EQ(a.tokens.back().back(), '.');
  EXPECT_EQ(a.tokens[1].front(), ' ');
  Generation cut = generate("hello world", 2, 3);
  EXPECT_EQ(cut.tokens.size(), 3u);
  EXPECT_EQ(cut.finish_reason, "length");
  EXPECT_EQ(cut.tokens[0], a.tokens[0]);
}

TEST(VllmGenerate, IgnoreEosGivesExactlyMaxTokens) {
  for (int n : {1, 7, 1024}) {
    Generation g = generate("a long prompt", 3, n, true);
    ASSERT_EQ(g.tokens.size(), static_cast<std::size_t>(n));
    EXPECT_EQ(g.finish_reason, "length");
    std::string text;
    for (const auto& t : g.tokens) text += t;
    EXPECT_EQ(count_words(text), n);  // one word a token
  }
  EXPECT_EQ(generate("p", 1, 5, true).tokens, generate("p", 1, 5, false).tokens);  // same words, cut alike
}

TEST(VllmGenerate, ChatTokensAreTheSharedUnit) {
  std::string text;
  int tokens = 0;
  const char* body = R"({"messages":[{"role":"user","content":"a b c"},{"role":"assistant","content":"d"}]})";
  rapidjson::Document d;
  d.Parse(body);
  EXPECT_EQ(read_prompt(d, true, text, tokens), "");
  EXPECT_EQ(tokens, chat_message_tokens("user", "a b c") + chat_message_tokens("assistant", "d"));
}

TEST(VllmGenerate, CountWords) {
  EXPECT_EQ(count_words(""), 0);
  EXPECT_EQ(count_words("  a b\tc\n"), 3);
}

TEST(VllmGenerate, ReadsChatAndTextPrompts) {
  std::string text;
  int tokens = 0;
  EXPECT_EQ(read_prompt(Json(R"({"messages":[{"role":"user","content":"hi there"}]})"), true, text, tokens), "");
  EXPECT_EQ(text, "user: hi there\n");
  EXPECT_EQ(tokens, 3 + 3);
  text.clear();
  EXPECT_EQ(read_prompt(Json(R"({"prompt":["a b", 5]})"), false, text, tokens), "");
  EXPECT_EQ(text, "a b5 ");
  EXPECT_EQ(tokens, 3);
  EXPECT_EQ(read_prompt(Json(R"({"messages":[]})"), true, text, tokens), "'messages' must be a non-empty array");
  EXPECT_EQ(read_prompt(Json(R"({})"), false, text, tokens), "'prompt' is required");
  EXPECT_NE(read_prompt(Json(R"({"prompt":[{}]})"), false, text, tokens), "");
}

}  // namespace
}  // namespace ixfake::vllm
