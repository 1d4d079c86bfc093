#include "chat_prompt.h"

#include <gtest/gtest.h>

#include "token_units.h"

namespace ixfake::client {
namespace {

TEST(ChatPrompt, FillerHasTheWordsAskedAndDependsOnTheSeed) {
  EXPECT_EQ(filler_words(0, 1), "");
  EXPECT_EQ(ixfake::count_words(filler_words(1000, 1)), 1000);
  EXPECT_EQ(filler_words(50, 1), filler_words(50, 1));
  EXPECT_NE(filler_words(50, 1), filler_words(50, 2));
}

TEST(ChatPrompt, AFirstTurnIsExactlyTheTarget) {
  for (int target : {9, 10, 100, 1024, 8000}) {
    std::vector<Message> turn = fit_turn({}, "Session s-0, turn 0:", target, 7);
    ASSERT_EQ(turn.size(), 1u);
    EXPECT_EQ(turn[0].role, "user");
    EXPECT_EQ(turn[0].content.rfind("Session s-0, turn 0:", 0), 0u);
    EXPECT_EQ(chat_tokens(turn), target);
  }
}

TEST(ChatPrompt, AHeaderLongerThanTheTargetIsSentAlone) {
  std::vector<Message> turn = fit_turn({{"user", "a b c"}, {"assistant", "d"}}, "one two three four", 3, 7);
  ASSERT_EQ(turn.size(), 1u);
  EXPECT_EQ(turn[0].content, "one two three four");
  EXPECT_EQ(chat_tokens(turn), chat_message_tokens("user", "one two three four"));
}

TEST(ChatPrompt, KeepsTheNewestHistoryThatFitsAndPadsTheRest) {
  const std::vector<Message> history = {{"user", filler_words(40, 1)},
                                        {"assistant", filler_words(30, 2)},
                                        {"user", filler_words(20, 3)},
                                        {"assistant", filler_words(10, 4)}};
  // Everything fits: all kept, the new message pads to the target.
  std::vector<Message> turn = fit_turn(history, "h:", 500, 9);
  ASSERT_EQ(turn.size(), 5u);
  EXPECT_EQ(chat_tokens(turn), 500);
  // Room for the last two messages only (24 + 14 tokens, the header's 5).
  turn = fit_turn(history, "h:", 60, 9);
  ASSERT_EQ(turn.size(), 3u);
  EXPECT_EQ(turn[0].content, history[2].content);
  EXPECT_EQ(chat_tokens(turn), 60);
  // Room for none: the turn is the new message alone.
  turn = fit_turn(history, "h:", 16, 9);
  ASSERT_EQ(turn.size(), 1u);
  EXPECT_EQ(chat_tokens(turn), 16);
}

}  // namespace
}  // namespace ixfake::client
