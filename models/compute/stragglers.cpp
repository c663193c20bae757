#include "models/compute/stragglers.hpp"

#include <algorithm>
#include <cmath>

namespace micsim {

double straggler_slowdown(double rate_per_s, double stall_s, int ranks, int world, double step_compute_s, double sync_points) {
  if (!(rate_per_s > 0) || !(stall_s > 0) || !(step_compute_s > 0)) return 0.0;
  const double s = std::max(1.0, sync_points);
  auto late = [&](int n, double intervals) {  // expected stalls met, at most one per interval
    return intervals * -std::expm1(-rate_per_s * double(std::max(1, n)) * step_compute_s / intervals);
  };
  const double met = std::max(late(ranks, s), late(std::max(world, ranks), 1.0));
  const double own = late(1, s);
  return std::max(0.0, stall_s * (met - own) / step_compute_s);
}

}  // namespace micsim
