#pragma once
// Published nccl-tests rows vs the collective model: per row the predicted and published value, and
// per source the median and 90th-percentile absolute error. Busbw is compared for sizes >= 1 MiB,
// time for sizes <= 64 KiB (where latency dominates).
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "models/calibration/calibration.hpp"
#include "validation/nccl_tests.hpp"

namespace micsim {

// Maps published cluster names to catalog instances (validation/data/nccl-tests-clusters.yaml).
class ClusterMap {
 public:
  static ClusterMap load(const std::string& path);
  static ClusterMap builtin();  // the file shipped in validation/data
  // The instance a cluster is, or nullopt: not a catalog instance, or the run set an NCCL variable
  // the model has no term for (`not_modelled` in the file), so no instance predicts it.
  std::optional<std::string> instance_for(const std::string& cluster) const;
  // The same for a published row, whose source (the command it cites) or log environment may set them too.
  std::optional<std::string> instance_for(const NcclTestRow& row) const;
  // The first `not_modelled` variable the text sets (nccl_setting), or "".
  std::string unmodelled_setting(const std::string& text) const;
  // The catalog terms of this fabric (inter-node) and the NVLink terms every instance shares (intra-node)
  // that were fitted on the published file (`fitted_on` in the file; by file name), by fit_network's names:
  // a held-out score of that file must not use them.
  std::set<std::string> terms_fitted_on(const std::string& fabric, const std::string& file) const;
  // The files `fitted_on` lists for a fabric (or "intra").
  std::vector<std::string> files_fitted_on(const std::string& group) const;

 private:
  std::vector<std::pair<std::string, std::string>> entries_;
  std::vector<std::string> not_modelled_;
  std::map<std::string, std::map<std::string, std::set<std::string>>> fitted_on_;  // fabric or "intra" -> file -> terms
};

struct CollectiveComparison {
  NcclTestRow row;
  std::string instance;
  std::string metric;          // "busbw" or "time"
  double published = 0;        // B/s or s
  double predicted = 0;
  CollectiveEstimate estimate; // what the model chose
  double error() const { return (predicted - published) / published; }
};

struct ErrorSummary {
  size_t count = 0;
  double median_abs = 0, p90_abs = 0;
  double mean_signed = 0;  // mean of the errors with their signs (bias)
};
ErrorSummary summarize_errors(const std::vector<double>& rel_errors);

// Compares every comparable row (known op, mapped cluster, size in one of the two ranges).
// `instance_override` forces one instance for all rows (for a user's own logs).
std::vector<CollectiveComparison> compare_collectives(const std::vector<NcclTestRow>& rows, const ClusterMap& map,
                                                      const std::string& instance_override = "",
                                                      const Calibration* calibration = nullptr);

// Predicted time of a row's collective with the given network parameters.
double predict_time(const NetworkParams& net, const NcclTestRow& row);

// Least-squares fit of the network terms for one instance (Eigen, Levenberg-Marquardt on log time).
struct NetworkFit {
  Calibration calibration;            // the fitted values
  std::vector<std::string> fitted;    // names of the parameters that the rows could determine
  std::vector<std::string> at_prior;  // terms replaced by generic priors (FitOptions::priors) and not fitted
  std::vector<std::string> unmoved;   // parameters some rows were taken to inform, but none moved: kept, not fitted
  std::vector<NcclTestRow> rows;      // rows used
  std::vector<double> before, after;  // relative time error per row, catalog defaults vs fitted
  int iterations = 0;
};
struct FitOptions {
  bool include_two_node_allreduce = false;  // NCCL uses tree there; off by default (see issue notes)
  // Catalog terms (fit_network's names) to replace by generic priors before the fit, so that the ones the
  // rows cannot fit keep the priors: for a held-out score of a file those terms were fitted on. The fit
  // then also starts only from guesses that owe nothing to the catalog.
  std::set<std::string> priors;
};
NetworkFit fit_network(const InstanceSpec& inst, const std::vector<NcclTestRow>& rows, const FitOptions& opt = {});

// Leave one source out: every published file is scored with network terms fitted on the other files'
// rows of the same instance (all node counts and sizes), never on its own. A file whose instance no
// other file measured is scored with the catalog defaults and flagged (`held_out` false): those
// defaults may have been fitted on it.
struct HeldOutComparison {
  CollectiveComparison c;
  std::string fabric;
  bool held_out = false;        // the terms that scored it came from other sources only
  size_t training_rows = 0;
  std::vector<std::string> at_prior;  // catalog terms fitted on this file that the others could not fit: generic priors
};
std::vector<HeldOutComparison> compare_collectives_held_out(const std::vector<NcclTestRow>& rows, const ClusterMap& map);

// How far the published sources disagree with each other, which no fabric-level model can beat when it
// is scored on a source it was not fitted on: for each row, its published value over the mean of the
// other files' values at the same fabric, node count, rank count, forced algorithm and protocol (if any),
// collective, size and metric, less 1 (NaN where no other file measured that point). The median of its
// magnitude is the held-out error of an oracle that predicts exactly what the other sources measured.
std::vector<double> between_source_deviation(const std::vector<HeldOutComparison>& rows);

}  // namespace micsim
