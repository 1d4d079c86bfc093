#include "node_agent/hang_watch.h"

#include <algorithm>
#include <cmath>

namespace ix {
namespace {

// A NaN or an infinity says nothing about progress (NaN != NaN would read
// as a change every time): unset.
std::optional<double> Finite(std::optional<double> v) {
  if (v && !std::isfinite(*v)) return std::nullopt;
  return v;
}

}  // namespace

bool HangWatch::Observe(double now, std::optional<double> requests_running,
                        std::optional<double> generation_tokens) {
  const std::optional<double> running = Finite(requests_running);
  const std::optional<double> tokens = Finite(generation_tokens);
  const bool progressed = tokens && (!last_tokens_ || *tokens != *last_tokens_);
  if (tokens) last_tokens_ = tokens;

  if (running && *running <= 0) {  // idle: nothing to make tokens for
    hung_ = false;
    stalled_since_.reset();
    return false;
  }
  if (progressed) {
    hung_ = false;
    // The clock starts over when it ran, or when requests are running now;
    // with `running` unset and no clock, there is no sign of work to time.
    if (running || stalled_since_) stalled_since_ = now;
    return false;
  }
  // From here: no progress seen. Only a reading of running requests with a
  // reading of the counter is evidence of a stall.
  if (!running || !tokens) return false;
  if (!stalled_since_) stalled_since_ = now;
  if (hung_ || now - *stalled_since_ < hang_after_) return false;
  hung_ = true;
  return true;
}

double HangWatch::stalled_for(double now) const {
  return stalled_since_ ? std::max(0.0, now - *stalled_since_) : 0.0;
}

}  // namespace ix
