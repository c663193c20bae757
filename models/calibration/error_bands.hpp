#pragma once
// Prediction intervals: how far published runs fall from micsim's prediction, out of sample. The
// bands are random-effects prediction intervals (validation/prediction_interval.hpp: between-source
// and within-source spread) of the leave-one-source-out residuals of the training corpus (micsim validate
// --corpus ... --leave-one-source-out --write-bands FILE writes models/catalog/error_bands.yaml), per
// GPU generation and strategy family (sharded: zero3, hsdp, mics, and zero2 as FSDP runs it, SHARD_GRAD_OP;
// replicated: ddp, zero1, DeepSpeed's zero2: shards_parameters),
// falling back to the generation, then to all rows, when a class has rows from too few source groups.
// Every source group weighs the same in a band: a user's run is a new source, and how far a source
// sits from micsim (its software, its cluster) is most of the error, so one large table must not
// narrow the band for everyone.
#include <string>
#include <utility>
#include <vector>

#include "models/hardware/hardware.hpp"

namespace micsim {

struct ErrorBand {
  std::string gpu_generation;   // volta | ampere | hopper | all
  std::string family;           // sharded | replicated | all
  int rows = 0;
  int sources = 0;              // source groups the rows come from
  double q05 = 0, q95 = 0;      // 90 % interval of predicted/published - 1 for a new source's run
  // The 5th and 95th percentiles of each row's error less its source group's mean error (groups with two rows or
  // more): how far one prediction strays from the others of the same stack. Two predictions for the
  // same GPU share their stack's bias (software, cluster, how it was measured), so comparing them needs
  // only this spread, not the whole band.
  double rel_q05 = 0, rel_q95 = 0;
};

class ErrorBands {
 public:
  static const ErrorBands& builtin();
  // The band for a prediction (the most specific class with enough rows).
  const ErrorBand& for_prediction(GpuArch arch, bool sharded) const;
  // The classes a prediction belongs to, most specific first: (generation, family), (generation, all),
  // (all, all). Bands are built for these and chosen in this order.
  static std::vector<std::pair<std::string, std::string>> classes(GpuArch arch, bool sharded);
  // The same choice among any list of bands (most specific first); nullptr when none matches.
  static const ErrorBand* find(const std::vector<ErrorBand>& bands, GpuArch arch, bool sharded);
  const std::string& source() const { return source_; }
  static std::string generation_name(GpuArch a);

 private:
  std::vector<ErrorBand> bands_;
  std::string source_;
};

}  // namespace micsim
