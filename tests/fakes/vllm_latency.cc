#include "vllm_latency.h"

#include <algorithm>

namespace ixfake::vllm {

double LatencyModel::step_s(long running) const {
  const long others = std::max(running, 1L) - 1;
  return token_s + per_seq_s * static_cast<double>(others);
}

double LatencyModel::prefill_s(int computed_tokens, long running, int loaded_tokens) const {
  const double idle = (prefill_s_per_1k * static_cast<double>(std::max(computed_tokens, 0)) +
                       kv_load_s_per_1k * static_cast<double>(std::max(loaded_tokens, 0))) /
                      1000.0;
  if (token_s <= 0) return idle;
  return idle * step_s(running) / token_s;
}

double TokenPacer::next_due(long running) {
  if (issued_++ == 0) {
    due_s_ = arrival_s_ + model_.prefill_s(computed_tokens_, running, loaded_tokens_) + model_.step_s(running);
  } else {
    due_s_ += model_.step_s(running);
  }
  return due_s_;
}

double TokenPacer::write_interval_s(long streams) {
  return std::max(kMinSleepS, kWriteIntervalPerStreamS * static_cast<double>(streams));
}

bool TokenPacer::must_wait(double due_s, double now_s, int index, int count, double interval_s) {
  if (due_s <= now_s) return false;
  if (index == 0 || index + 1 == count) return true;
  return due_s - now_s > interval_s;
}

}  // namespace ixfake::vllm
