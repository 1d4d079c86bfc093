#include "submitter/report/svg_axis.h"

#include <algorithm>
#include <cmath>

#include "submitter/report/report_text.h"

namespace ix {

double Axis::Fraction(double v) const {
  if (log2) return (std::log2(v) - std::log2(lo)) / (std::log2(hi) - std::log2(lo));
  return (v - lo) / (hi - lo);
}

std::string Axis::Label(double v) const {
  if (log2) return v >= 1 ? FormatFixed(v, 0) : FormatSignificant(v, 3);
  return FormatFixed(v, decimals);
}

double NiceStep(double raw) {
  if (!(raw > 0) || !std::isfinite(raw)) return 1;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  // A small tolerance, so 0.2 computed as 0.20000000000000004 stays 0.2.
  for (const double m : {1.0, 2.0, 5.0}) {
    if (m * power >= raw * (1 - 1e-9)) return m * power;
  }
  return 10 * power;
}

Axis MakeLinearAxis(double min, double max, bool include_zero, int target_ticks) {
  if (!std::isfinite(min) || !std::isfinite(max)) min = 0, max = 1;
  if (min > max) std::swap(min, max);
  if (include_zero) min = std::min(min, 0.0), max = std::max(max, 0.0);
  const double magnitude = std::max(std::fabs(min), std::fabs(max));
  if (max - min <= magnitude * 1e-12) {
    // No spread: zero gets [0, 1], anything else 10% around the value.
    if (magnitude == 0) {
      min = 0, max = 1;
    } else {
      min -= magnitude * 0.1, max += magnitude * 0.1;
    }
  }
  if (target_ticks < 1) target_ticks = 1;
  const double step = NiceStep((max - min) / target_ticks);
  Axis axis;
  // A small tolerance, so 0.6 / 0.2 = 2.9999999999999996 is 3 steps.
  const double first = std::floor(min / step + 1e-9);
  const double last = std::ceil(max / step - 1e-9);
  axis.lo = first * step;
  axis.hi = last * step;
  if (!(axis.lo < axis.hi)) axis.hi = axis.lo + step;
  // Each tick as index * step (no running sum, so no creeping error).
  for (double k = first; k <= last + 0.5 && axis.ticks.size() < 64; k += 1) {
    axis.ticks.push_back(k == 0 ? 0.0 : k * step);
  }
  axis.decimals = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
  return axis;
}

Axis MakeLog2Axis(double min, double max) {
  if (!(min > 0) || !(max > 0) || !std::isfinite(min) || !std::isfinite(max)) min = 1, max = 2;
  if (min > max) std::swap(min, max);
  // Exponents clamped far beyond any concurrency, so pow() stays finite.
  int e_lo = static_cast<int>(std::clamp(std::floor(std::log2(min)), -60.0, 60.0));
  int e_hi = static_cast<int>(std::clamp(std::ceil(std::log2(max)), -60.0, 60.0));
  if (e_lo == e_hi) --e_lo, ++e_hi;
  // Every other power (or fewer) on a wide range; the range ends on a tick.
  const int stride = (e_hi - e_lo + 9) / 10;
  e_hi = e_lo + (e_hi - e_lo + stride - 1) / stride * stride;
  Axis axis;
  axis.log2 = true;
  axis.lo = std::ldexp(1.0, e_lo);
  axis.hi = std::ldexp(1.0, e_hi);
  for (int e = e_lo; e <= e_hi; e += stride) axis.ticks.push_back(std::ldexp(1.0, e));
  return axis;
}

}  // namespace ix
