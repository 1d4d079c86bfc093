#include "submitter/report/pareto.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ix {

std::vector<size_t> ParetoFrontier(const std::vector<ParetoPoint>& points) {
  std::vector<size_t> order;
  for (size_t i = 0; i < points.size(); ++i) {
    if (std::isfinite(points[i].x) && std::isfinite(points[i].y)) order.push_back(i);
  }
  // Best x first, and within one x best y first (then by index, so the
  // result does not depend on the sort's stability).
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (points[a].x != points[b].x) return points[a].x > points[b].x;
    if (points[a].y != points[b].y) return points[a].y > points[b].y;
    return a < b;
  });
  // Sweeping from the best x: a point is dominated when a point with a
  // greater x already reached its y, or one with its x has a greater y.
  std::vector<size_t> frontier;
  double best_y = -std::numeric_limits<double>::infinity();
  for (size_t k = 0; k < order.size();) {
    const double x = points[order[k]].x;
    const double group_best = points[order[k]].y;
    size_t end = k;
    while (end < order.size() && points[order[end]].x == x) ++end;
    if (group_best > best_y) {
      for (size_t j = k; j < end && points[order[j]].y == group_best; ++j) frontier.push_back(order[j]);
      best_y = group_best;
    }
    k = end;
  }
  // x ascending; identical points in index order.
  std::sort(frontier.begin(), frontier.end(), [&](size_t a, size_t b) {
    return points[a].x != points[b].x ? points[a].x < points[b].x : a < b;
  });
  return frontier;
}

}  // namespace ix
