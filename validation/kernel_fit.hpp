#pragma once
// The compute model's per-GPU constants fitted on published kernel measurements
// (validation/data/gemm, attention, hbm): GEMM efficiency, dimension half-point and overhead on the
// 16-bit GEMMs; the FP8 GEMM efficiency; FlashAttention / cuDNN attention efficiency forward and
// backward; achievable HBM bandwidth. `micsim calibrate --kernels DIR` runs it; the catalog's GPU
// entries carry the results with their sources. A row counts for a GPU when its gpu column names it,
// or names its family "unspecified" (e.g. H100-unspecified for H100-SXM-80GB); PCIe parts do not.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "models/hardware/hardware.hpp"
#include "validation/collective_validation.hpp"
#include "validation/gemm.hpp"

namespace micsim {

struct KernelRowError {
  std::string kind;  // gemm | fp8 gemm | attention <kernel> | hbm: the rows `calibrate --kernels` summarises together
  std::string what, file;
  int line = 0;
  double error = 0;          // predicted / measured time - 1 with the fitted constants (in sample)
  double catalog_error = 0;  // predicted / measured time - 1 with the catalog's terms for the GPU, before
                             // any fit: out of sample wherever these rows are not among those the catalog
                             // was fitted on (a user's own harness measurements)
};

// One fused attention kernel's fit on its 16-bit rows: the length terms (seq_half, causal and full
// masks apart) on the sweeps among them, then the long-sequence efficiency of each pass as the median
// of what each row implies once its length factor is taken out.
struct AttentionKernelFit {
  AttentionKernelEfficiency efficiency;  // 0 where no rows of that pass; efficiency.seq_half 0 where no sweep
  size_t forward_rows = 0, backward_rows = 0;
  size_t causal_sweep_rows = 0, full_sweep_rows = 0;  // rows that fitted seq_half.causal / .full
};

// Which kernel a published attention row ran (its impl column); nullopt = not a fused kernel.
std::optional<AttentionKernel> attention_kernel_of_impl(const std::string& impl);

struct KernelFit {
  Calibration calibration;          // the fitted terms (those with rows); attention = the FlashAttention-2 class
  size_t gemm_rows = 0, fp8_rows = 0, hbm_rows = 0;
  std::map<AttentionKernel, AttentionKernelFit> attention_kernels;  // every kernel with rows, fa2 included
  // The FlashAttention-2 class's fit (what calibration.attention_efficiency holds); empty without rows.
  AttentionKernelFit fa2() const {
    const auto k = attention_kernels.find(AttentionKernel::FA2);
    return k == attention_kernels.end() ? AttentionKernelFit{} : k->second;
  }
  std::vector<std::string> files;   // sources used
  std::vector<KernelRowError> rows; // per-row error after the fit
};

// Per kind of row (KernelRowError::kind): the errors of the catalog's terms and of the fit.
struct KernelKindErrors {
  size_t rows = 0;
  ErrorSummary catalog, fitted;
};
std::map<std::string, KernelKindErrors> errors_by_kind(const KernelFit& fit);

// True when a published gpu name is `gpu` (exact, or its family marked "unspecified").
bool gpu_row_matches(const std::string& row_gpu, const std::string& gpu);

KernelFit fit_kernels(const GpuSpec& gpu, const std::string& data_dir);

}  // namespace micsim
