// The fake engine's latency model (tests/fakes/README.md, "Latency"): each
// data-parallel rank is one "GPU" whose decode step, the time between two
// tokens of a sequence, grows with the sequences it runs at once, and whose
// prefill takes time in proportion to the prompt, so a sweep over
// concurrency shows the real shape: TPOT and TTFT grow with load, and
// throughput (sequences / step) grows, then saturates at 1 / per_seq_s.
// TokenPacer turns the model into when each token of one answer is sent.
#pragma once

namespace ixfake::vllm {

// The model's knobs, in seconds. Invariant: all >= 0 (the switches check).
struct LatencyModel {
  double token_s = 0;          // FAKE_VLLM_TOKEN_DELAY_MS: a step with this sequence alone
  double per_seq_s = 0;        // FAKE_VLLM_TOKEN_DELAY_PER_SEQ_MS: added per other sequence on the rank
  double prefill_s_per_1k = 0; // FAKE_VLLM_PREFILL_MS_PER_1K: per 1000 computed prompt tokens on an idle rank
  double kv_load_s_per_1k = 0; // FAKE_VLLM_KV_LOAD_MS_PER_1K: per 1000 tokens loaded from the CPU KV tier

  // One decode step while `running` sequences (this one included; at least
  // 1 is assumed) run on the rank: token_s + per_seq_s * (running - 1).
  double step_s(long running) const;

  // The prefill of a prompt whose `computed_tokens` are not in the KV cache
  // (vllm_kv_cache.h: GPU cache hits cost nothing) and whose
  // `loaded_tokens` come from the CPU tier, while `running` sequences run:
  // (prefill_s_per_1k * computed + kv_load_s_per_1k * loaded) / 1000,
  // slowed by step_s(running) / token_s (chunked prefill shares its steps
  // with the others' decodes), or not slowed when token_s is 0.
  double prefill_s(int computed_tokens, long running, int loaded_tokens = 0) const;

  bool zero() const { return token_s == 0 && per_seq_s == 0 && prefill_s_per_1k == 0 && kv_load_s_per_1k == 0; }
};

// When each token of one answer is due, and whether the sender sleeps
// before it. Token 0 is due prefill + one step after the request arrived;
// token i one step (at the load of that moment) after token i - 1. The
// deadlines are absolute, so a late wake-up is caught up and the answer's
// length in time is the model's, not the sum of the sleeps' overshoots.
// Tokens due less than a write interval ahead are sent without sleeping
// (early by at most that), so small steps cost one write and one wake-up per
// interval instead of one per token; the first token (TTFT) and the last
// (the end of the answer) are always waited for. The client derives ITL
// from TPOT, not from when chunks arrive, so early tokens change no metric.
class TokenPacer {
 public:
  static constexpr double kMinSleepS = 0.001;
  static constexpr double kWriteIntervalPerStreamS = 0.0001;

  // computed_tokens and loaded_tokens: as LatencyModel::prefill_s.
  TokenPacer(const LatencyModel& model, double arrival_s, int computed_tokens, int loaded_tokens = 0)
      : model_(model), arrival_s_(arrival_s), computed_tokens_(computed_tokens), loaded_tokens_(loaded_tokens) {}

  // The due time of the next token, given the sequences running on the rank
  // now; call once per token, in order.
  double next_due(long running);

  // The shortest sleep worth a wake-up while `streams` answers stream from
  // the process: kMinSleepS, longer under load, so the process writes at
  // most 1 / kWriteIntervalPerStreamS times a second in all whatever the
  // knobs (128 streams of 0.1 ms tokens would otherwise be 1.3 M writes/s).
  static double write_interval_s(long streams);

  // Whether a sender at `now_s` must flush what it holds and sleep until
  // `due_s` before token `index` of `count`.
  static bool must_wait(double due_s, double now_s, int index, int count, double interval_s = kMinSleepS);

 private:
  LatencyModel model_;
  double arrival_s_;
  int computed_tokens_;
  int loaded_tokens_;
  int issued_ = 0;
  double due_s_ = 0;
};

}  // namespace ixfake::vllm
