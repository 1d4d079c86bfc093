// HangWatch: whether one step's engines (or one engine, or one DP rank)
// are hung, from their /metrics readings over time. An engine is hung
// when it has requests running and none of its progress counters has
// moved for `hang_after` seconds: a running request that makes no token in
// a minute is stuck (a wedged NCCL collective, a dead GPU), while a busy
// engine adds tokens every decode step. For vLLM the counters are
// generation_tokens_total and prompt_tokens_total: a long prefill moves
// only the second, a decode only the first, so either moving is progress.
// The node agent (which reports) and ix-stepd (which acts) decide with this one type.
//
// The rules, one reading at a time (Observe, ObserveCounters):
// - a counter changed (any change, a drop too: a restarted engine resets
//   it) is progress: not hung, the stall clock starts again;
// - busy (requests_running) == 0 is idle: not hung, no stall clock (an
//   idle engine makes no tokens and is fine);
// - busy > 0 with every counter read and none changed: the stall clock
//   runs from the first such reading (or the last change), and reaching
//   `hang_after` starts a hang episode;
// - an unset reading (the family is missing, a NaN, or an engine the
//   caller could not read and passes as unset) is no evidence either way:
//   the state is kept as it is. One unset counter among several is no
//   evidence of a stall either: it may be the one that moved;
// - ObserveNoAnswer: the server did not answer while its process lives (a
//   wedged event loop: an engine stopped outright answers nothing) counts
//   as busy with no progress: the stall clock runs as above. Only the
//   caller knows that the process lives and that it had answered before
//   (a server still starting up has not), so this is its own input, not
//   an unset reading. An idle engine answers, with busy 0, so it is never
//   hung by this rule.
//
// Invariants: an Observe* call returns true exactly once per episode, on
// the reading that starts it; an episode ends only with progress or
// idleness. Pure logic: the caller passes the time (any clock that does
// not go backwards; the tests use a fake one). Copyable, so a map of steps
// (or of ranks) can hold one each.
#pragma once

#include <optional>
#include <vector>

namespace ix {

class HangWatch {
 public:
  explicit HangWatch(double hang_after_seconds) : hang_after_(hang_after_seconds) {}

  // One reading at `now` (seconds): the engines' requests running and
  // generation tokens (sums over the step's engines; unset when unknown).
  // True when a new hang began with this reading.
  bool Observe(double now, std::optional<double> requests_running, std::optional<double> generation_tokens);

  // One reading at `now` with several progress counters, any of which
  // moving is progress. `counters` is the same list, in the same order, at
  // every call (matched by position; a list of another length starts over:
  // every counter read in it counts as a change). No counters: nothing
  // measures progress, never a stall. True when a new hang began.
  bool ObserveCounters(double now, std::optional<double> busy, const std::vector<std::optional<double>>& counters);

  // The server did not answer at `now` while its process lives: busy with
  // no progress. The counters' last readings are kept, so the next answer
  // is compared with them. True when a new hang began.
  bool ObserveNoAnswer(double now);

  // In a hang episode.
  bool hung() const { return hung_; }
  // Seconds with requests running (or no answer) and no counter moving, as
  // of `now`; 0 when the stall clock is not running.
  double stalled_for(double now) const;
  double hang_after() const { return hang_after_; }
  // The counters' last finite readings, by position (for a report of the
  // hang); empty before the first reading.
  const std::vector<std::optional<double>>& last_counters() const { return last_counters_; }

 private:
  // No progress at `now` with work to do: the stall clock runs (from now
  // when it did not); true when it reaches hang_after_ and starts an
  // episode.
  bool NoProgress(double now);

  double hang_after_;
  std::vector<std::optional<double>> last_counters_;  // each counter's last finite reading
  std::optional<double> stalled_since_;               // the stall clock's start; unset when not running
  bool hung_ = false;
};

}  // namespace ix
