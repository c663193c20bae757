#pragma once
// A prediction interval for one row of a source that has not been seen: the random-effects model of
// meta-analysis. Each source group g has its own offset from micsim (its software, cluster and way of
// measuring) and its rows scatter around that offset:
//
//   error(row of g) = mu + b_g + e,   b_g ~ N(0, tau^2) between sources,  e ~ N(0, sigma^2) within one.
//
// A user's run is a row of a new source, so its interval is
//
//   mu ± t(0.95; k - 2) · sqrt(tau^2 + Var(mu) + sigma^2)
//
// (Higgins, Thompson & Spiegelhalter 2009, "A re-evaluation of random-effects meta-analysis", J. R.
// Stat. Soc. A 172(1): the prediction interval of a new study's effect; sigma^2 added for one row in it),
// with tau^2 by the method of moments (DerSimonian & Laird 1986) on the group means, every group
// weighing the same. Quantiles of the pooled residuals instead would make a new source's band the range
// of the few sources seen so far: with ten of them, the 5th and 95th percentiles are about the most
// extreme source on each side, and a source beyond those (the next one is, often enough) falls outside.
#include <string>
#include <vector>

namespace micsim {

struct RandomEffectsInterval {
  int groups = 0;
  double mu = 0;            // mean of the group means
  double tau = 0;           // between-source standard deviation
  double sigma = 0;         // within-source standard deviation (pooled over groups of two rows or more)
  double se_mu = 0;         // standard error of mu
  double t = 0;             // Student t quantile used, k - 2 degrees of freedom
  double low = 0, high = 0;
};

// `by_group`: the errors of each source group's rows. Needs three groups or more (k - 2 degrees of
// freedom); `coverage` is the two-sided probability (0.9 for a 90 % interval).
RandomEffectsInterval random_effects_interval(const std::vector<std::vector<double>>& by_group, double coverage = 0.9);

}  // namespace micsim
