#include "models/compute/jitter.hpp"

#include <algorithm>
#include <unordered_map>

namespace micsim {

double normal_quantile(double p) {
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                             1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                             6.680131188771972e+01,  -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                             -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00};
  if (p <= 0) return -INFINITY;
  if (p >= 1) return INFINITY;
  const double lo = 0.02425, hi = 1 - lo;
  if (p < lo) {
    double q = std::sqrt(-2 * std::log(p));
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  if (p > hi) {
    double q = std::sqrt(-2 * std::log(1 - p));
    return -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  double q = p - 0.5, r = q * q;
  return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
         (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

namespace {
double stddev_max_by_quadrature(int n) {
  // Density of the maximum: n·phi(x)·Phi(x)^(n-1); its mass sits in [-8, 10] for any int n.
  const double lo = -8.0, hi = 10.0;
  const int intervals = 600;  // even, for Simpson's rule
  const double dx = (hi - lo) / intervals;
  double m0 = 0, m1 = 0, m2 = 0;
  for (int i = 0; i <= intervals; ++i) {
    const double x = lo + i * dx;
    const double cdf = 0.5 * std::erfc(-x / std::sqrt(2.0));
    const double log_density = std::log(double(n)) - 0.5 * x * x - 0.5 * std::log(2.0 * M_PI) + (n - 1) * std::log(std::max(cdf, 1e-300));
    const double w = (i == 0 || i == intervals) ? 1.0 : (i % 2 ? 4.0 : 2.0);
    const double f = w * std::exp(log_density);
    m0 += f, m1 += f * x, m2 += f * x * x;
  }
  const double mean = m1 / m0;
  return std::sqrt(std::max(0.0, m2 / m0 - mean * mean));
}
}  // namespace

double stddev_max_standard_normal(int n) {
  if (n <= 1) return 1.0;
  // A planner ranks thousands of candidates with a handful of group sizes: 600 points once per size.
  thread_local std::unordered_map<int, double> known;
  auto it = known.find(n);
  if (it == known.end()) it = known.emplace(n, stddev_max_by_quadrature(n)).first;
  return it->second;
}

double jitter_compute_factor(double cv, int ranks, int groups, int micro_steps) {
  if (!(cv > 0)) return 1.0;
  double excess = expected_max_standard_normal(ranks);
  if (groups > 1)
    excess += stddev_max_standard_normal(ranks) * expected_max_standard_normal(groups) / std::sqrt(double(std::max(1, micro_steps)));
  return 1.0 + cv * excess;
}

double jitter_cv_over_window(double cv_1s, double exponent, double window_s) {
  if (exponent <= 0 || !(window_s > 0)) return cv_1s;
  return cv_1s * std::pow(kJitterReferenceWindowS / std::max(window_s, kJitterShortestWindowS), exponent);
}

}  // namespace micsim
