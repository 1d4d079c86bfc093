// Axis: a data range made "nice" for a chart, with its ticks and their
// labels; linear (ticks at 1-2-5 steps) or log2 (ticks at powers of two,
// for concurrency 1..512).
//
// Invariants: lo < hi (a single value, or no spread, still gives a range);
// ticks ascend within [lo, hi]; on a log2 axis lo > 0 and every tick is a
// power of two. Fraction() maps lo to 0 and hi to 1.
#pragma once

#include <string>
#include <vector>

namespace ix {

struct Axis {
  double lo = 0;
  double hi = 1;
  bool log2 = false;
  std::vector<double> ticks;
  int decimals = 0;  // digits after the point of a linear tick's label

  // Where `v` lies between lo (0) and hi (1); outside [0, 1] when `v` is
  // outside the range. On a log2 axis `v` must be > 0.
  double Fraction(double v) const;
  // The label of tick `v` ("0.25", "1200", "64").
  std::string Label(double v) const;
};

// The smallest 1, 2 or 5 times a power of ten that is >= `raw` (> 0).
double NiceStep(double raw);

// A linear axis over [min, max] (as the data has them, min <= max), with
// about `target_ticks` intervals; with `include_zero` the range reaches 0
// (quantities such as throughput read honestly from zero). NaN or infinite
// bounds give [0, 1]; min == max gives a range around the value.
Axis MakeLinearAxis(double min, double max, bool include_zero, int target_ticks = 5);

// A log2 axis from the power of two at or below `min` to the one at or
// above `max` (both > 0; anything else gives [1, 2]); one power of two each
// way more when they meet. At most about 10 ticks (every other power when
// the range is wider).
Axis MakeLog2Axis(double min, double max);

}  // namespace ix
