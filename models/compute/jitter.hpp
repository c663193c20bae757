#pragma once
// Synchronisation jitter: ranks do not finish their compute at the same moment, and every collective
// waits for its slowest member. With compute between two synchronisations of mean C and coefficient of
// variation cv, a rank that meets N ranks within a micro-step (jitter_sync_ranks, sim/simulation.cpp)
// runs at the pace of the slowest: C·(1 + cv·E[max of N standard normals]), less what communication it
// did not trigger hides (the analytic engine runs that rank's timeline; the SimGrid engine samples a
// factor per node with a fixed seed).
#include <cmath>

namespace micsim {

// Inverse of the standard normal CDF (Acklam's rational approximation, relative error < 1.2e-9).
double normal_quantile(double p);

// E[max of n i.i.d. standard normals], Blom's approximation Phi^-1((n - 0.375) / (n + 0.25)); 0 for n <= 1.
inline double expected_max_standard_normal(int n) { return n <= 1 ? 0.0 : normal_quantile((n - 0.375) / (n + 0.25)); }

}  // namespace micsim
