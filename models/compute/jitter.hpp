#pragma once
// Synchronisation jitter: ranks do not finish their compute at the same moment, and every collective
// waits for its slowest member. With per-rank compute times of mean C and coefficient of variation cv,
// a step over N ranks takes C·(1 + cv·E[max of N standard normals]) where the compute is synchronised
// (closed form for the analytic engine; the SimGrid engine samples it per node with a fixed seed).
#include <cmath>

namespace micsim {

// Inverse of the standard normal CDF (Acklam's rational approximation, relative error < 1.2e-9).
double normal_quantile(double p);

// E[max of n i.i.d. standard normals], Blom's approximation Phi^-1((n - 0.375) / (n + 0.25)); 0 for n <= 1.
inline double expected_max_standard_normal(int n) { return n <= 1 ? 0.0 : normal_quantile((n - 0.375) / (n + 0.25)); }

}  // namespace micsim
