// The JSON bodies of the fake engine's OpenAI API: completions (whole and as
// SSE chunks), /v1/models and errors, with vLLM's field names and order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vllm_generate.h"

namespace ixfake::vllm {

// One completion request being answered. Invariant: `rank` is one of the
// process's local ranks and `model` one of its served names.
struct Call {
  bool chat = false;  // /v1/chat/completions, else /v1/completions
  int rank = 0;       // the data-parallel rank serving it
  std::string id;     // "chatcmpl-PID-N" or "cmpl-PID-N"
  std::string model;
  std::int64_t created = 0;  // Unix seconds
  Generation gen;
  double t0 = 0;  // now_s() when it arrived
  // The prompt's place in the rank's KV cache (vllm_kv_cache.h): tokens found
  // on the GPU, loaded from the CPU tier, and the id that releases them.
  int gpu_hit_tokens = 0;
  int cpu_hit_tokens = 0;
  std::uint64_t kv_id = 0;
  // --enable-prompt-tokens-details: usage.prompt_tokens_details is
  // {"cached_tokens": hits} instead of null.
  bool prompt_tokens_details = false;
};

// The non-streamed answer: a chat.completion or text_completion with usage.
std::string full_response(const Call& c);

// One SSE frame, "data: {...}\n\n": a delta (role and/or content, finish
// reason; a null pointer leaves the field out or null) or, with usage_only,
// the final chunk with no choices and the usage.
std::string sse_chunk(const Call& c, const char* role, const std::string* content, const char* finish,
                      bool usage_only);

// {"error":{"message","type","param","code"}}, as vLLM's OpenAI server.
std::string error_json(int status, const std::string& message, const char* type);

// /v1/models: one entry per served name, rooted at model_path.
std::string models_json(const std::vector<std::string>& served_names, const std::string& model_path,
                        long long max_model_len);

}  // namespace ixfake::vllm
