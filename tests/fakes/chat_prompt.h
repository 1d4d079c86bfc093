// The chat prompts ix-fake-client sends: a session's conversation, and, when
// a turn must have a given input length (ISL/OSL, random_lengths.h), the
// turn's messages fitted to that length in the fake engine's token unit
// (token_units.h), so the engine's `usage.prompt_tokens` is exactly it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ixfake::client {

struct Message {
  std::string role;
  std::string content;
};

// The prompt's tokens as the fake engine counts them.
int chat_tokens(const std::vector<Message>& messages);

// `words` deterministic filler words (from a small vocabulary, chosen by
// hashes of seed and position), separated by single spaces.
std::string filler_words(int words, std::uint64_t seed);

// The messages of one turn whose prompt is `target` tokens: the newest
// messages of `history` that fit (older ones are dropped, whole, as a
// sliding context window would), then a user message of `header` padded
// with filler words up to the target. When the header alone is longer than
// the target, the turn is the header alone, longer than asked. Invariant:
// chat_tokens(result) == max(target, chat_message_tokens("user", header)).
std::vector<Message> fit_turn(const std::vector<Message>& history, const std::string& header, int target,
                              std::uint64_t seed);

}  // namespace ixfake::client
