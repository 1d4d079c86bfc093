// The fake AIPerf's traces (tests/fakes/README.md, "aiperf"): the Weka v1
// trace file (data/agentx-synthetic.jsonl), each trace flattened into the
// steps one trajectory lane replays, the prompt text of a step, the lanes'
// seeded choice of trajectories and start points, and the theoretical
// prefix-cache hit of a trajectory's requests.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace ixfake::aiperf {

// One request of a trajectory, in replay order. A main-agent turn has
// conversation suffix "" and turn_index counting main turns only (as
// InferenceX's trace_metadata.py numbers them); a subagent's request has
// "::sa:<agent_id>" and counts within its subagent. Invariants: input_len
// >= 1, output_len >= 1, gap_s >= 0.
struct Step {
  std::string conversation_suffix;
  int turn_index = 0;
  int input_len = 0, output_len = 0;  // tokens
  std::vector<std::uint64_t> hash_ids;
  double gap_s = 0;  // idle time before it ("think_time"), uncapped
};

// One trace. Invariants: id non-empty, block_size >= 1, steps non-empty.
struct Trace {
  std::string id;
  int block_size = 64;
  std::vector<Step> steps;
  int peak_input() const;
};

// Parses a JSONL trace file (one trace a line; blank lines skipped). Returns
// nullopt and sets `error` ("LINE N: why") on anything malformed.
std::optional<std::vector<Trace>> parse_traces(const std::string& text, std::string& error);
std::optional<std::vector<Trace>> load_traces(const std::string& path, std::string& error);

// The user message of a step, `input_len` tokens in the fake engine's unit
// (token_units.h) as one chat message with role "user": block k of the
// prompt's token stream is the text of hash_ids[k], a function of (salt,
// hash id) only, so requests that share leading hash ids share leading
// words and the engine's prefix cache can hit; words past the blocks are
// filler seeded by `salt` and the step. `salt` stands for AIPerf's cache
// bust: one trajectory instance's text differs from another's.
std::string prompt_content(const Trace& trace, const Step& step, std::uint64_t salt);

// Seeded choices of one lane (--random-seed, lane number): which trace each
// of its trajectories replays, and where the first one starts, uniform in
// [int(min * n), min(int(max * n), n - 2)] clamped to [0, n - 1], for n steps.
class LanePlanner {
 public:
  LanePlanner(unsigned long long seed, int lane, double min_ratio, double max_ratio);
  std::size_t next_trace(std::size_t trace_count);
  int start_step(int steps);

 private:
  std::mt19937_64 rng_;
  double min_ratio_;
  double max_ratio_;
};

// AIPerf's theoretical prefix cache over one trajectory instance: a
// request's blocks hit when they are the leading blocks already sent by an
// earlier request of the same instance (its root or a subagent). observe()
// returns {hit blocks, total blocks} and remembers the blocks.
class PrefixTracker {
 public:
  std::pair<int, int> observe(const std::vector<std::uint64_t>& hash_ids);

 private:
  std::set<std::uint64_t> seen_;
};

}  // namespace ixfake::aiperf
