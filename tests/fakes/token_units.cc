#include "token_units.h"

#include <cctype>

namespace ixfake {
namespace {

// Counts words across pieces of one text, as if they were concatenated.
class WordCounter {
 public:
  void feed(std::string_view piece) {
    for (char c : piece) {
      const bool space = std::isspace(static_cast<unsigned char>(c)) != 0;
      if (!space && !in_word_) ++words_;
      in_word_ = !space;
    }
  }
  int words() const { return words_; }

 private:
  int words_ = 0;
  bool in_word_ = false;
};

}  // namespace

int count_words(std::string_view text) {
  WordCounter c;
  c.feed(text);
  return c.words();
}

int chat_message_tokens(std::string_view role, std::string_view content) {
  WordCounter c;
  for (std::string_view piece : {role, std::string_view(": "), content, std::string_view("\n")}) c.feed(piece);
  return kChatMessageOverhead + c.words();
}

}  // namespace ixfake
