#include "validation/prediction_interval.hpp"

#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace micsim {

namespace {
double mean(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0) / double(v.size()); }
double sample_variance(const std::vector<double>& v) {
  const double m = mean(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return s / double(v.size() - 1);
}
}  // namespace

RandomEffectsInterval random_effects_interval(const std::vector<std::vector<double>>& by_group, double coverage) {
  std::vector<std::vector<double>> groups;
  for (const auto& g : by_group)
    if (!g.empty()) groups.push_back(g);
  const int k = int(groups.size());
  if (k < 3) throw std::invalid_argument("random_effects_interval: three source groups or more are needed");
  RandomEffectsInterval r;
  r.groups = k;
  std::vector<double> means, within;
  for (const auto& g : groups) {
    means.push_back(mean(g));
    if (g.size() >= 2) within.push_back(sample_variance(g));
  }
  r.mu = mean(means);
  // A group of one row says nothing about the scatter inside a stack: it takes the pooled value.
  const double sigma2 = within.empty() ? 0.0 : mean(within);
  std::vector<double> mean_variance;  // Var(group mean) from the scatter within the group
  for (const auto& g : groups) mean_variance.push_back((g.size() >= 2 ? sample_variance(g) : sigma2) / double(g.size()));
  const double tau2 = std::max(0.0, sample_variance(means) - mean(mean_variance));
  const double var_mu = (tau2 + mean(mean_variance)) / double(k);
  r.sigma = std::sqrt(sigma2), r.tau = std::sqrt(tau2), r.se_mu = std::sqrt(var_mu);
  r.t = boost::math::quantile(boost::math::students_t(double(k - 2)), 0.5 + coverage / 2);
  const double half = r.t * std::sqrt(tau2 + var_mu + sigma2);
  r.low = r.mu - half, r.high = r.mu + half;
  return r;
}

}  // namespace micsim
