#pragma once
// Synchronisation jitter: ranks do not finish their compute at the same moment, and every collective
// waits for its slowest member. With compute between two synchronisations of mean C and coefficient of
// variation cv, a rank that meets N ranks within a micro-step (jitter_sync_ranks, sim/simulation.cpp)
// runs at the pace of the slowest: C·(1 + cv·E[max of N standard normals]), less what communication it
// did not trigger hides (the analytic engine runs that rank's timeline; the SimGrid engine samples a
// factor per node with a fixed seed). Where the N ranks are one of G groups that meet only at the step's
// end (MiCS / HSDP partition groups between their per-step all-reduces, k micro-steps apart), the step
// also waits for the group whose k micro-steps added up slowest (jitter_compute_factor).
#include <cmath>

namespace micsim {

// Inverse of the standard normal CDF (Acklam's rational approximation, relative error < 1.2e-9).
double normal_quantile(double p);

// E[max of n i.i.d. standard normals], Blom's approximation Phi^-1((n - 0.375) / (n + 0.25)); 0 for n <= 1.
inline double expected_max_standard_normal(int n) { return n <= 1 ? 0.0 : normal_quantile((n - 0.375) / (n + 0.25)); }

// Standard deviation of the max of n i.i.d. standard normals (1 for n <= 1), by quadrature of the
// max's density n·phi(x)·Phi(x)^(n-1) (Simpson's rule on [-8, 10], 600 intervals).
double stddev_max_standard_normal(int n);

// The slowest rank's compute factor for one step: a micro-step meets `ranks` ranks (noise resolved
// there: cv·E[max of ranks] per micro-step), and the world / ranks = `groups` groups meet once per step,
// after `micro_steps` micro-steps whose noise adds up independently (transient noise: each group's
// excess over its mean has standard deviation cv·sd[max of ranks]/sqrt(k) per micro-step, in units of
// the mean compute), so the step ends with the slowest group:
//   1 + cv·(E[max of ranks] + sd[max of ranks]·E[max of groups]/sqrt(k)).
// With one group (every micro-step meets the world) it is 1 + cv·E[max of ranks]. For k = 1 the sum
// approximates E[max of ranks·groups], as it must (a normal approximation of the groups' maxima).
double jitter_compute_factor(double cv, int ranks, int groups, int micro_steps);

// The compute-time noise over a micro-step of `window_s` seconds (the mean rank's compute). Noise with a
// short correlation time averages out over a longer interval (independent increments: CV ~ T^-1/2), so
// a rank's lead or lag over a 10-s micro-step is a smaller share of it than over a 0.3-s one. Measured on
// one H200 (validation/data/harness-h200-2026-12-04/jitter.csv, 400 iterations of 8 ms; docs/model.md sec 2.6):
// CV 4.5 % per iteration but in episodes of 10-40 iterations, of means over 96 / 200 / 400 / 800 ms
// 3.6 / 3.0 / 2.1 / 1.0 %. `cv_1s` is the CV over a one-second
// window; below kJitterShortestWindowS the noise no longer averages out (those episodes), so the CV stops
// growing there. exponent 0 gives cv_1s whatever the window.
constexpr double kJitterReferenceWindowS = 1.0;
constexpr double kJitterShortestWindowS = 0.1;
double jitter_cv_over_window(double cv_1s, double exponent, double window_s);

}  // namespace micsim
