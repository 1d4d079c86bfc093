#include "chat_prompt.h"

#include "fake_common.h"
#include "token_units.h"

namespace ixfake::client {

int chat_tokens(const std::vector<Message>& messages) {
  int n = 0;
  for (const Message& m : messages) n += chat_message_tokens(m.role, m.content);
  return n;
}

std::string filler_words(int words, std::uint64_t seed) {
  static const char* const kWords[] = {"lorem", "ipsum", "dolor", "sit",  "amet",  "consectetur", "adipiscing", "elit",
                                       "sed",   "do",    "tempor", "ut", "labore", "magna",       "aliqua",     "enim"};
  std::string out;
  out.reserve(static_cast<std::size_t>(words > 0 ? words : 0) * 7);
  std::uint64_t h = hash64(std::to_string(seed));
  for (int i = 0; i < words; ++i) {
    h = h * 6364136223846793005ULL + 1442695040888963407ULL;  // an LCG step; its top bits pick the word
    if (i > 0) out += ' ';
    out += kWords[h >> 60];
  }
  return out;
}

std::vector<Message> fit_turn(const std::vector<Message>& history, const std::string& header, int target,
                              std::uint64_t seed) {
  const int header_tokens = chat_message_tokens("user", header);
  std::vector<int> costs;
  int kept_tokens = 0;
  for (const Message& m : history) {
    costs.push_back(chat_message_tokens(m.role, m.content));
    kept_tokens += costs.back();
  }
  std::size_t first = 0;  // the oldest message kept
  while (first < history.size() && kept_tokens + header_tokens > target) kept_tokens -= costs[first++];
  std::vector<Message> turn(history.begin() + static_cast<std::ptrdiff_t>(first), history.end());
  const int filler = target - kept_tokens - header_tokens;
  turn.push_back({"user", filler > 0 ? header + " " + filler_words(filler, seed) : header});
  return turn;
}

}  // namespace ixfake::client
