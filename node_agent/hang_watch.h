// HangWatch: whether one step's engines are hung, from their /metrics
// readings over time. An engine is hung when it has requests running and
// its generation-token counter has not moved for `hang_after` seconds: a
// running request that makes no token in a minute is stuck (a wedged
// NCCL collective, a dead GPU), while a busy engine adds tokens every
// decode step.
//
// The rules, one reading at a time (Observe):
// - the token counter changed (any change, a drop too: a restarted engine
//   resets it) is progress: not hung, the stall clock starts again;
// - requests_running == 0 is idle: not hung, no stall clock (an idle engine
//   makes no tokens and is fine);
// - requests_running > 0 with the counter unchanged: the stall clock runs
//   from the first such reading (or the last change), and reaching
//   `hang_after` starts a hang episode;
// - an unset reading (the engine did not answer, the family is missing, a
//   NaN) is no evidence either way: the state is kept as it is.
//
// Invariants: Observe returns true exactly once per episode, on the reading
// that starts it; an episode ends only with progress or idleness. Pure
// logic: the caller passes the time (any clock that does not go backwards;
// the tests use a fake one). Copyable, so a map of steps can hold one each.
#pragma once

#include <optional>

namespace ix {

class HangWatch {
 public:
  explicit HangWatch(double hang_after_seconds) : hang_after_(hang_after_seconds) {}

  // One reading at `now` (seconds): the engines' requests running and
  // generation tokens (sums over the step's engines; unset when unknown).
  // True when a new hang began with this reading.
  bool Observe(double now, std::optional<double> requests_running, std::optional<double> generation_tokens);

  // In a hang episode.
  bool hung() const { return hung_; }
  // Seconds the counter has stood still with requests running, as of
  // `now`; 0 when the stall clock is not running.
  double stalled_for(double now) const;
  double hang_after() const { return hang_after_; }

 private:
  double hang_after_;
  std::optional<double> last_tokens_;    // the counter's last reading
  std::optional<double> stalled_since_;  // the stall clock's start; unset when not running
  bool hung_ = false;
};

}  // namespace ix
