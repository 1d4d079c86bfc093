// The fakes' token unit: what the fake engine counts as a token (a
// whitespace-separated word, plus a fixed cost per chat message), in one
// place, so the fake client can build a prompt of an exact length and the
// engine's `usage` agrees with it (tests/fakes/README.md, "Endpoints").
#pragma once

#include <string_view>

namespace ixfake {

// Whitespace-separated words.
int count_words(std::string_view text);

// Tokens of one chat message as the fake engine counts them: 3 for the
// message's framing plus the words of "ROLE: CONTENT\n". Messages add up
// (each ends with a newline, so no word spans two).
int chat_message_tokens(std::string_view role, std::string_view content);

// The framing cost of a chat message, beyond the words of "ROLE: CONTENT".
inline constexpr int kChatMessageOverhead = 3;

}  // namespace ixfake
