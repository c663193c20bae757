#include "validation/least_squares.hpp"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>

namespace micsim {

FitOutcome fit_least_squares(const std::vector<FitParameter>& params,
                             const std::function<std::vector<double>(const std::vector<double>&)>& residuals,
                             double delta, int max_iterations) {
  const int P = int(params.size());
  FitOutcome out;
  auto values_of = [&](const Eigen::VectorXd& x) {
    std::vector<double> v(P);
    for (int j = 0; j < P; ++j) v[j] = std::clamp(std::exp(x[j]), params[j].lo, params[j].hi);
    return v;
  };
  // sqrt of the Huber loss with the sign kept, so that least squares on r minimises Huber.
  auto robust = [&](const std::vector<double>& x) {
    std::vector<double> raw = residuals(values_of(Eigen::Map<const Eigen::VectorXd>(x.data(), P)));
    Eigen::VectorXd r(raw.size());
    for (size_t i = 0; i < raw.size(); ++i) {
      double a = std::fabs(raw[i]);
      r[i] = (delta <= 0 || a <= delta) ? raw[i] : std::copysign(std::sqrt(delta * (2 * a - delta)), raw[i]);
    }
    return r;
  };
  Eigen::VectorXd x(P);
  for (int j = 0; j < P; ++j) x[j] = std::log(std::clamp(params[j].value, params[j].lo, params[j].hi));
  auto eval = [&](const Eigen::VectorXd& v) { return robust(std::vector<double>(v.data(), v.data() + P)); };
  Eigen::VectorXd r = eval(x);
  double cost = r.squaredNorm();
  if (P == 0 || r.size() < P) {
    out.values = values_of(x);
    out.cost = cost;
    return out;
  }
  double lambda = 1e-2;
  for (int it = 0; it < max_iterations; ++it) {
    out.iterations = it + 1;
    Eigen::MatrixXd J(r.size(), P);
    for (int j = 0; j < P; ++j) {  // central differences in log space
      Eigen::VectorXd xp = x, xm = x;
      xp[j] += 1e-4;
      xm[j] -= 1e-4;
      J.col(j) = (eval(xp) - eval(xm)) / 2e-4;
    }
    Eigen::MatrixXd A = J.transpose() * J;
    Eigen::VectorXd g = J.transpose() * r;
    bool improved = false, converged = false;
    for (int tries = 0; tries < 12 && !improved; ++tries) {
      Eigen::MatrixXd D = A;
      D.diagonal() += lambda * (A.diagonal().array() + 1e-9).matrix();
      Eigen::VectorXd xn = x + D.ldlt().solve(-g);
      for (int j = 0; j < P; ++j) xn[j] = std::clamp(xn[j], std::log(params[j].lo), std::log(params[j].hi));
      Eigen::VectorXd rn = eval(xn);
      double cn = rn.squaredNorm();
      if (cn < cost) {
        improved = true;
        converged = (cost - cn) / std::max(cost, 1e-30) < 1e-9;
        x = xn;
        r = rn;
        cost = cn;
        lambda = std::max(lambda / 3, 1e-9);
      } else {
        lambda *= 4;
      }
    }
    if (!improved || converged) break;
  }
  out.values = values_of(x);
  out.cost = cost;
  return out;
}

}  // namespace micsim
