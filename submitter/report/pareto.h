// The Pareto frontier of points where both coordinates are "higher is
// better" (x = interactivity in tok/s/user, y = throughput per GPU): the
// points no other point dominates, i.e. no other point is at least as good
// in both and better in one.
#pragma once

#include <cstddef>
#include <vector>

namespace ix {

struct ParetoPoint {
  double x = 0;
  double y = 0;
};

// The indices into `points` of the frontier, sorted by x ascending (so y
// descends along it). Identical points are both on it when either is; a
// point with a NaN or infinite coordinate is never on it (and dominates
// nothing).
std::vector<size_t> ParetoFrontier(const std::vector<ParetoPoint>& points);

}  // namespace ix
