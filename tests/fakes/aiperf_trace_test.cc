// Unit tests of the fake aiperf's traces (aiperf_trace.h), including the
// shipped data/agentx-synthetic.jsonl.
#include "aiperf_trace.h"

#include <gtest/gtest.h>

#include <sstream>

#include "token_units.h"

namespace ixfake::aiperf {
namespace {

const char* const kTrace =
    R"({"id":"t1","block_size":4,"requests":[)"
    R"({"type":"s","in":8,"out":3,"hash_ids":[0,1]},)"
    R"({"type":"subagent","agent_id":"explore_001","requests":[{"type":"n","in":12,"out":2,"hash_ids":[0,1,5],"think_time":0.2}]},)"
    R"({"type":"tool"},)"
    R"({"type":"n","in":16,"out":0,"hash_ids":[0,1,2,3],"think_time":1.5}]})";

std::vector<std::string> split(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

TEST(AiperfTrace, FlattensMainTurnsAndSubagents) {
  std::string error;
  auto traces = parse_traces(std::string(kTrace) + "\n\n", error);
  ASSERT_TRUE(traces) << error;
  ASSERT_EQ(traces->size(), 1u);
  const Trace& t = (*traces)[0];
  EXPECT_EQ(t.block_size, 4);
  ASSERT_EQ(t.steps.size(), 3u);
  EXPECT_EQ(t.steps[0].conversation_suffix, "");
  EXPECT_EQ(t.steps[0].turn_index, 0);
  EXPECT_EQ(t.steps[1].conversation_suffix, "::sa:explore_001");
  EXPECT_EQ(t.steps[1].turn_index, 0);
  EXPECT_DOUBLE_EQ(t.steps[1].gap_s, 0.2);
  EXPECT_EQ(t.steps[2].turn_index, 1);  // main turns count on past the subagent
  EXPECT_EQ(t.steps[2].output_len, 1);  // "out": 0 still asks one token
  EXPECT_EQ(t.peak_input(), 16);
}

TEST(AiperfTrace, RefusesMalformedLines) {
  std::string error;
  EXPECT_FALSE(parse_traces(std::string(kTrace) + "\n{\"id\":\"x\"}\n", error));
  EXPECT_EQ(error.rfind("line 2:", 0), 0u) << error;
  EXPECT_FALSE(parse_traces("not json\n", error));
  EXPECT_FALSE(parse_traces("", error));
}

TEST(AiperfTrace, PromptsHaveTheLengthAndShareBlocks) {
  std::string error;
  auto traces = parse_traces(kTrace, error);
  ASSERT_TRUE(traces) << error;
  const Trace& t = (*traces)[0];
  for (const Step& s : t.steps) {
    EXPECT_EQ(chat_message_tokens("user", prompt_content(t, s, 7)), s.input_len);
  }
  // Steps 0 and 2 share blocks 0-1 (8 tokens: 4 of framing, 4 words).
  auto a = split(prompt_content(t, t.steps[0], 7));
  auto b = split(prompt_content(t, t.steps[2], 7));
  ASSERT_EQ(a.size(), 4u);
  EXPECT_EQ(std::vector<std::string>(b.begin(), b.begin() + 4), a);
  // Another trajectory instance (salt) gets other text.
  EXPECT_NE(prompt_content(t, t.steps[2], 8), prompt_content(t, t.steps[2], 7));
}

TEST(AiperfTrace, LanesAreSeeded) {
  LanePlanner a(42, 3, 0.25, 0.75), b(42, 3, 0.25, 0.75), c(43, 3, 0.25, 0.75);
  std::vector<std::size_t> ta, tb, tc;
  for (int i = 0; i < 8; ++i) {
    ta.push_back(a.next_trace(12));
    tb.push_back(b.next_trace(12));
    tc.push_back(c.next_trace(12));
  }
  EXPECT_EQ(ta, tb);
  EXPECT_NE(ta, tc);
  for (int i = 0; i < 100; ++i) {
    const int s = a.start_step(10);
    EXPECT_GE(s, 2);
    EXPECT_LE(s, 7);
  }
  EXPECT_EQ(a.start_step(1), 0);
  EXPECT_EQ(a.start_step(2), 0);
}

TEST(AiperfTrace, TheoreticalPrefixHits) {
  PrefixTracker p;
  EXPECT_EQ(p.observe({0, 1, 2}), std::make_pair(0, 3));
  EXPECT_EQ(p.observe({0, 1, 2, 3, 4}), std::make_pair(3, 5));
  EXPECT_EQ(p.observe({0, 9, 3}), std::make_pair(1, 3));  // a hit must be a leading run
}

TEST(AiperfTrace, ShippedTraceSet) {
  std::string error;
  auto traces = load_traces(IX_SOURCE_DIR "/tests/fakes/data/agentx-synthetic.jsonl", error);
  ASSERT_TRUE(traces) << error;
  EXPECT_GE(traces->size(), 10u);
  int subagent_steps = 0;
  for (const Trace& t : *traces) {
    const std::vector<std::uint64_t>* parent = nullptr;
    for (const Step& s : t.steps) {
      EXPECT_EQ(s.input_len, static_cast<int>(s.hash_ids.size()) * t.block_size) << t.id;
      EXPECT_LE(s.input_len, 2048) << t.id;
      if (s.conversation_suffix.empty()) {
        if (parent != nullptr) {  // a main turn extends the previous one
          EXPECT_TRUE(std::equal(parent->begin(), parent->end(), s.hash_ids.begin())) << t.id;
        }
        parent = &s.hash_ids;
      } else {
        ++subagent_steps;
        ASSERT_NE(parent, nullptr);
        EXPECT_EQ(s.hash_ids[0], (*parent)[0]) << t.id;  // starts from the parent's prefix
      }
    }
  }
  EXPECT_GT(subagent_steps, 10);
}

}  // namespace
}  // namespace ixfake::aiperf
