#include "core/process/hang_watch.h"

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
  return ObserveCounters(now, requests_running, {generation_tokens});
}

bool HangWatch::ObserveCounters(double now, std::optional<double> busy,
                                const std::vector<std::optional<double>>& counters) {
  const std::optional<double> running = Finite(busy);
  if (counters.size() != last_counters_.size()) last_counters_.assign(counters.size(), std::nullopt);
  bool progressed = false;
  bool all_read = !counters.empty();
  for (size_t i = 0; i < counters.size(); ++i) {
    const std::optional<double> c = Finite(counters[i]);
    if (!c) {
      all_read = false;
      continue;
    }
    if (!last_counters_[i] || *c != *last_counters_[i]) progressed = true;
    last_counters_[i] = c;
  }

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
  // reading of every counter is evidence of a stall.
  if (!running || !all_read) return false;
  return NoProgress(now);
}

bool HangWatch::ObserveNoAnswer(double now) { return NoProgress(now); }

bool HangWatch::NoProgress(double now) {
  if (!stalled_since_) stalled_since_ = now;
  if (hung_ || now - *stalled_since_ < hang_after_) return false;
  hung_ = true;
  return true;
}

double HangWatch::stalled_for(double now) const {
  return stalled_since_ ? std::max(0.0, now - *stalled_since_) : 0.0;
}

}  // namespace ix
