#pragma once
// Robust non-linear least squares (Levenberg-Marquardt with Eigen) over bounded positive parameters,
// fitted in log space with a Huber loss on the residuals: the calibration fits (network terms from
// nccl-tests, compute terms from GEMM timings) all go through here.
#include <functional>
#include <string>
#include <vector>

namespace micsim {

struct FitParameter {
  std::string name;
  double value;      // start value (> 0)
  double lo, hi;     // bounds (> 0)
};

struct FitOutcome {
  std::vector<double> values;
  int iterations = 0;
  double cost = 0;   // sum of Huber losses at the end
};

// `residuals(values)` returns one residual per observation (typically log(predicted / measured)).
// `huber_delta` bounds the influence of outliers (0 = plain least squares).
FitOutcome fit_least_squares(const std::vector<FitParameter>& params,
                             const std::function<std::vector<double>(const std::vector<double>&)>& residuals,
                             double huber_delta = 0.1, int max_iterations = 100);

}  // namespace micsim
