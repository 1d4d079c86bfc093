#include "vllm_responses.h"

#include <gtest/gtest.h>

#include <string>

namespace ixfake::vllm {
namespace {

Call ChatCall() {
  Call c;
  c.chat = true;
  c.rank = 2;
  c.id = "chatcmpl-1-1";
  c.model = "m";
  c.created = 7;
  c.gen.tokens = {"Hi", " there."};
  c.gen.prompt_tokens = 5;
  c.gen.finish_reason = "stop";
  return c;
}

TEST(VllmResponses, FullChatCompletion) {
  EXPECT_EQ(full_response(ChatCall()),
            R"({"id":"chatcmpl-1-1","object":"chat.completion","created":7,"model":"m","choices":[{"index":0,)"
            R"("message":{"role":"assistant","content":"Hi there.","reasoning_content":null,"tool_calls":[]},)"
            R"("logprobs":null,"finish_reason":"stop","stop_reason":null}],"usage":{"prompt_tokens":5,)"
            R"("total_tokens":7,"completion_tokens":2,"prompt_tokens_details":null},"served_by_rank":2})");
}

TEST(VllmResponses, SseChunks) {
  Call c = ChatCall();
  std::string empty;
  EXPECT_EQ(sse_chunk(c, "assistant", &empty, nullptr, false),
            R"(data: {"id":"chatcmpl-1-1","object":"chat.completion.chunk","created":7,"model":"m","choices":[)"
            R"({"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],)"
            R"("served_by_rank":2})"
            "\n\n");
  EXPECT_EQ(sse_chunk(c, nullptr, nullptr, nullptr, true),
            R"(data: {"id":"chatcmpl-1-1","object":"chat.completion.chunk","created":7,"model":"m","choices":[],)"
            R"("usage":{"prompt_tokens":5,"total_tokens":7,"completion_tokens":2,"prompt_tokens_details":null},)"
            R"("served_by_rank":2})"
            "\n\n");
  c.chat = false;
  std::string token = " x";
  EXPECT_EQ(sse_chunk(c, nullptr, &token, "length", false),
            R"(data: {"id":"chatcmpl-1-1","object":"text_completion","created":7,"model":"m","choices":[)"
            R"({"index":0,"text":" x","logprobs":null,"finish_reason":"length"}],"served_by_rank":2})"
            "\n\n");
}

TEST(VllmResponses, ErrorBody) {
  EXPECT_EQ(error_json(404, "no such model", "NotFoundError"),
            R"({"error":{"message":"no such model","type":"NotFoundError","param":null,"code":404}})");
}

}  // namespace
}  // namespace ixfake::vllm
