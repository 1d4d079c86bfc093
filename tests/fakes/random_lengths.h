// Request lengths drawn as InferenceX's client draws them
// (utils/bench_serving/benchmark_serving.py, sample_random_requests with
// --dataset-name random): np.random.seed(--seed), then every input length,
// then every output length, each uniform in [int(len * range_ratio), len].
// NumpyLegacyRandom reproduces numpy's legacy RandomState.randint, so the
// same seed gives the same lengths as the real client.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace ixfake::client {

// numpy.random.RandomState(seed) for randint: MT19937 seeded as numpy's
// legacy seeding does (init_genrand, which std::mt19937(seed) is), and
// numpy's bounded draw (masked rejection on 32-bit outputs for ranges below
// 2^32; a range of one value draws nothing).
class NumpyLegacyRandom {
 public:
  explicit NumpyLegacyRandom(std::uint32_t seed) : gen_(seed) {}
  // np.random.randint(low, high + 1). Requires low <= high and
  // high - low < 2^32 - 1.
  std::int64_t randint_inclusive(std::int64_t low, std::int64_t high);

 private:
  std::mt19937 gen_;
};

// What the draw needs. Invariant (check_length_spec): isl, osl >= 1,
// 0 <= range_ratio <= 1.
struct LengthSpec {
  int isl = 0;
  int osl = 0;
  double range_ratio = 0.8;  // InferenceX's workflows set RANDOM_RANGE_RATIO=0.8
  std::uint32_t seed = 0;    // benchmark_serving.py's --seed default
};

// The error message for a spec that breaks the invariant ("" when fine).
const char* check_length_spec(const LengthSpec& spec);

// sample_uniform: `count` draws uniform in [int(seq_len * range_ratio), seq_len].
std::vector<int> sample_uniform(NumpyLegacyRandom& rng, int seq_len, double range_ratio, int count);

// The lengths of `count` requests, in request order.
struct DrawnLengths {
  std::vector<int> input;
  std::vector<int> output;
};
DrawnLengths draw_lengths(const LengthSpec& spec, int count);

}  // namespace ixfake::client
