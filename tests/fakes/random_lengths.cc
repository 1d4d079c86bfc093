#include "random_lengths.h"

namespace ixfake::client {

std::int64_t NumpyLegacyRandom::randint_inclusive(std::int64_t low, std::int64_t high) {
  const auto range = static_cast<std::uint64_t>(high - low);
  if (range == 0) return low;  // numpy draws nothing for a single value
  std::uint64_t mask = range;  // the smallest all-ones mask covering range
  for (int shift = 1; shift < 64; shift *= 2) mask |= mask >> shift;
  std::uint64_t v = 0;
  do {
    v = static_cast<std::uint64_t>(gen_()) & mask;
  } while (v > range);
  return low + static_cast<std::int64_t>(v);
}

const char* check_length_spec(const LengthSpec& spec) {
  if (spec.isl < 1 || spec.osl < 1) return "input and output lengths must be at least 1";
  if (!(spec.range_ratio >= 0 && spec.range_ratio <= 1)) return "the range ratio must be from 0 to 1";
  return "";
}

std::vector<int> sample_uniform(NumpyLegacyRandom& rng, int seq_len, double range_ratio, int count) {
  // Python's int(seq_len * range_ratio): the double product, truncated.
  const auto lower = static_cast<std::int64_t>(static_cast<double>(seq_len) * range_ratio);
  std::vector<int> lens;
  lens.reserve(static_cast<std::size_t>(count > 0 ? count : 0));
  for (int i = 0; i < count; ++i) lens.push_back(static_cast<int>(rng.randint_inclusive(lower, seq_len)));
  return lens;
}

DrawnLengths draw_lengths(const LengthSpec& spec, int count) {
  NumpyLegacyRandom rng(spec.seed);
  DrawnLengths d;
  d.input = sample_uniform(rng, spec.isl, spec.range_ratio, count);
  d.output = sample_uniform(rng, spec.osl, spec.range_ratio, count);
  return d;
}

}  // namespace ixfake::client
