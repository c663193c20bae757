#pragma once
// Prediction intervals: how far published runs fall from micsim's prediction, out of sample. The
// bands are quantiles of the leave-one-source-out residuals of the training corpus (micsim validate
// --corpus ... --leave-one-source-out --write-bands FILE writes models/catalog/error_bands.yaml), per
// GPU generation and strategy family (sharded: zero3, hsdp, mics; replicated: ddp, zero1, zero2),
// falling back to the generation, then to all rows, when a class has too few rows.
#include <string>
#include <vector>

#include "models/hardware/hardware.hpp"

namespace micsim {

struct ErrorBand {
  std::string gpu_generation;   // volta | ampere | hopper | all
  std::string family;           // sharded | replicated | all
  int rows = 0;
  double q05 = 0, q95 = 0;      // quantiles of predicted/published - 1
};

class ErrorBands {
 public:
  static const ErrorBands& builtin();
  // The band for a prediction (the most specific class with enough rows).
  const ErrorBand& for_prediction(GpuArch arch, bool sharded) const;
  const std::string& source() const { return source_; }
  static std::string generation_name(GpuArch a);

 private:
  std::vector<ErrorBand> bands_;
  std::string source_;
};

}  // namespace micsim
