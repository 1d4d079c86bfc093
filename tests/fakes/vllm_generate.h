// What the fake engine "generates": a short answer that depends only on the
// prompt and max_tokens (exactly max_tokens words with vLLM's `ignore_eos`),
// so runs are repeatable (tests/fakes/README.md, "Endpoints"), and the prompt
// read from a completion request, counted in the fakes' token unit
// (token_units.h).
#pragma once

#include <rapidjson/document.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "token_units.h"

namespace ixfake::vllm {

// One answer. Invariants: tokens are words (every one after the first with
// its leading space), so count_words of their concatenation is their number;
// finish_reason is "length" when max_tokens cut it, else "stop" (and the
// last token ends with '.').
struct Generation {
  std::vector<std::string> tokens;
  int prompt_tokens = 0;
  std::string finish_reason;
};

using ixfake::count_words;

// 6 to 10 words chosen by hashes of the prompt, at most max_tokens; with
// ignore_eos exactly max_tokens words (finish_reason "length"), as vLLM
// does when the end-of-sequence token is ignored.
Generation generate(const std::string& prompt, int prompt_tokens, int max_tokens, bool ignore_eos = false);

// The prompt of a request body (`messages` for chat, else `prompt`: a string,
// strings or token ids) as text, and its token count; returns the 400 error
// message, empty on success. With token_hashes, also one hash per token, in
// order, as the engine sees the prompt (what its KV cache hashes,
// vllm_kv_cache.h): per chat message its 3 framing tokens, then the words of
// "ROLE: CONTENT\n"; so token_hashes->size() == tokens.
std::string read_prompt(const rapidjson::Document& doc, bool chat, std::string& text, int& tokens,
                        std::vector<std::uint64_t>* token_hashes = nullptr);

}  // namespace ixfake::vllm
