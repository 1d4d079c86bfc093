#include "token_units.h"

#include <gtest/gtest.h>

namespace ixfake {
namespace {

TEST(TokenUnits, CountWords) {
  EXPECT_EQ(count_words(""), 0);
  EXPECT_EQ(count_words("  a b\tc\n"), 3);
  EXPECT_EQ(count_words("one"), 1);
}

TEST(TokenUnits, AChatMessageIsThreeTokensPlusTheWordsOfRoleColonContent) {
  EXPECT_EQ(chat_message_tokens("user", "hi there"), 3 + 3);  // "user:" "hi" "there"
  EXPECT_EQ(chat_message_tokens("assistant", ""), 3 + 1);
  EXPECT_EQ(chat_message_tokens("", "x"), 3 + 2);  // ":" alone is a word
  EXPECT_EQ(chat_message_tokens("user", "  a  b  "), 3 + 3);
}

}  // namespace
}  // namespace ixfake
