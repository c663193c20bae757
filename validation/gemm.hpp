#pragma once
// Measured GEMMs (the harness's gemm sweep, or published cuBLAS figures) and the fit of the compute
// model's GEMM terms to them (micsim calibrate --gemm).
#include <optional>
#include <string>
#include <vector>

#include "models/calibration/calibration.hpp"
#include "models/workload/workload.hpp"

namespace micsim {

struct GemmRow {
  Gemm shape;
  Precision dtype = Precision::FP16;
  bool fp8 = false;    // dtype fp8 (e4m3): FP8 tensor cores
  bool tf32 = false;   // dtype tf32: not a training precision here; kept for the record, not fitted
  std::string gpu;     // the gpu column, when the file has one
  double time_s = 0;   // measured (or derived from TFLOPS)
  std::string name, source, file;
  int line = 0;
};

// CSV with columns m, n, k and time_us or tflops; optional: batch, dtype (fp16|bf16|fp32|fp8|tf32), gpu, name, source.
std::vector<GemmRow> load_gemm_csv(const std::string& path);
std::vector<GemmRow> parse_gemm_csv(const std::string& text, const std::string& shown_name);

struct GemmFit {
  Calibration calibration;               // gemm_efficiency, gemm_dim_half, gemm_overhead_us
  std::vector<GemmRow> rows;
  std::vector<double> before, after;     // relative time error per row: catalog default vs fitted
  int iterations = 0;
};
// Fits efficiency, dimension half-point and overhead on the 16-bit rows (rows of other precisions are
// left out), starting from the catalog values of `gpu`.
GemmFit fit_gemm(const GpuSpec& gpu, const std::vector<GemmRow>& rows);

// The distinct GEMM shapes of one micro-step of a workload (forward and backward), with a name and
// how many times each runs per micro-step (for the harness's sweep).
struct NamedGemm {
  std::string name;
  Gemm shape;
  int count = 0;
};
std::vector<NamedGemm> workload_gemms(const Workload& w);

}  // namespace micsim
