#include "validation/kernel_fit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "models/compute/compute_model.hpp"
#include "models/io/csv.hpp"
#include "models/io/input_error.hpp"

namespace micsim {

namespace {

namespace fs = std::filesystem;

std::string family_of(const std::string& gpu) { return gpu.substr(0, gpu.find('-')); }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::vector<std::string> csv_files(const fs::path& dir) {
  std::vector<std::string> out;
  if (!fs::is_directory(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".csv") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

double number(const std::string& s) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  return s.empty() || *end ? NAN : v;
}

// One published attention row of this GPU: its kernel, mask, pass, length and fraction of peak; rows
// of one sweep (same file, pass, head size, dtype and mask) share an efficiency.
struct AttentionRow {
  AttentionKernel kernel;
  bool causal = false, backward = false;
  double seq = 0, efficiency = 0, head_dim = 0;
  std::string sweep, file;
  int line = 0;
};

// The length at which the kernel runs at half its long-sequence rate (AttentionSeqHalf), fitted on
// the sweeps among `rows` (those with two lengths at least 2x apart): least squares on the logarithm
// of efficiency x (S + half) / S, each sweep at its own level. Returns the rows used (0 = no sweep).
size_t fit_seq_half(const std::vector<const AttentionRow*>& rows, double& half) {
  std::map<std::string, std::vector<const AttentionRow*>> sweeps;
  for (const auto* r : rows) sweeps[r->sweep].push_back(r);
  std::vector<std::vector<const AttentionRow*>> used;
  size_t n = 0;
  for (auto& [name, v] : sweeps) {
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end(), [](auto* a, auto* b) { return a->seq < b->seq; });
    if ((*hi)->seq >= 2 * (*lo)->seq) used.push_back(v), n += v.size();
  }
  if (used.empty()) return 0;
  double best = INFINITY;
  for (double h = 0; h <= 8192; h += 8) {  // one dimension, a smooth cost: a grid is exact enough
    double sse = 0;
    for (const auto& v : used) {
      std::vector<double> l;
      for (const auto* r : v) l.push_back(std::log(r->efficiency * (r->seq + h) / r->seq));
      double mean = 0;
      for (double x : l) mean += x / double(l.size());
      for (double x : l) sse += (x - mean) * (x - mean);
    }
    if (sse < best) best = sse, half = h;
  }
  return n;
}

// The catalog's terms for one kernel on this GPU: what a scenario with that attention_kernel uses
// before any calibration (ComputeCalibration::defaults_for picks them; a backward of 0 = the forward's).
AttentionKernelEfficiency catalog_attention(const GpuSpec& gpu, AttentionKernel kernel) {
  const ComputeCalibration c = ComputeCalibration::defaults_for(gpu, kernel);
  return {c.attention_efficiency, c.attention_backward_efficiency > 0 ? c.attention_backward_efficiency : c.attention_efficiency,
          c.attention_seq_half};
}

void fit_attention_kernel(const GpuSpec& gpu, AttentionKernel kernel, const std::vector<AttentionRow>& all, KernelFit& fit) {
  std::vector<const AttentionRow*> causal, full;
  for (const auto& r : all)
    if (r.kernel == kernel) (r.causal ? causal : full).push_back(&r);
  if (causal.empty() && full.empty()) return;
  AttentionKernelFit& k = fit.attention_kernels[kernel];
  AttentionSeqHalf& h = k.efficiency.seq_half;
  k.causal_sweep_rows = fit_seq_half(causal, h.causal);
  k.full_sweep_rows = fit_seq_half(full, h.full);
  // The level from rows at head size 128 where there are any: every model of 1B parameters and more
  // in the corpus has it, and at 64 the kernels run slower (FlashAttention-3 on H100: 416 against
  // 614 TFLOP/s at 8k, tritonbench); the length terms above take every sweep.
  const bool have_128 = std::any_of(all.begin(), all.end(), [&](const AttentionRow& r) { return r.kernel == kernel && r.head_dim == 128; });
  std::vector<double> forward, backward;
  for (const auto* set : {&causal, &full})
    for (const auto* r : *set)
      if (!have_128 || r->head_dim == 128) (r->backward ? backward : forward).push_back(r->efficiency / h.factor(r->seq, r->causal));
  if (!forward.empty()) k.efficiency.forward = median(forward), k.forward_rows = forward.size();
  if (!backward.empty()) k.efficiency.backward = median(backward), k.backward_rows = backward.size();
  // Errors in time (predicted / measured - 1): a kernel predicted at a lower efficiency than it ran
  // at is predicted slower, a positive error, as for the GEMM rows.
  const AttentionKernelEfficiency catalog = catalog_attention(gpu, kernel);
  for (const auto* set : {&causal, &full})
    for (const auto* r : *set) {
      const double long_eff = r->backward && k.backward_rows ? k.efficiency.backward : k.efficiency.forward;
      const double catalog_eff = (r->backward ? catalog.backward : catalog.forward) * catalog.seq_half.factor(r->seq, r->causal);
      fit.rows.push_back({std::string("attention ") + to_string(kernel),
                          fmt::format("attention {} {} s={:.0f}{}", to_string(kernel), r->backward ? "bwd" : "fwd", r->seq,
                                      r->causal ? " causal" : ""),
                          r->file, r->line, r->efficiency / (long_eff * h.factor(r->seq, r->causal)) - 1,
                          catalog_eff > 0 ? r->efficiency / catalog_eff - 1 : NAN});
    }
}

}  // namespace

std::map<std::string, KernelKindErrors> errors_by_kind(const KernelFit& fit) {
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> errors;
  for (const auto& r : fit.rows) {
    if (std::isfinite(r.catalog_error)) errors[r.kind].first.push_back(r.catalog_error);
    errors[r.kind].second.push_back(r.error);
  }
  std::map<std::string, KernelKindErrors> out;
  for (const auto& [kind, e] : errors) out[kind] = {e.second.size(), summarize_errors(e.first), summarize_errors(e.second)};
  return out;
}

bool gpu_row_matches(const std::string& row_gpu, const std::string& gpu) {
  if (row_gpu == gpu) return true;
  if (row_gpu.find("PCIe") != std::string::npos) return false;
  return row_gpu == family_of(gpu) + "-unspecified" || row_gpu == family_of(gpu) + "-SXM4-unspecified" ||
         row_gpu == family_of(gpu) + "-SXM2-unspecified";
}

std::optional<AttentionKernel> attention_kernel_of_impl(const std::string& impl) {
  if (impl == "flash2" || impl == "sdpa-flash2") return AttentionKernel::FA2;
  if (impl == "flash3") return AttentionKernel::FA3;
  if (impl == "cudnn") return AttentionKernel::CuDNN;
  return std::nullopt;
}

KernelFit fit_kernels(const GpuSpec& gpu, const std::string& data_dir) {
  KernelFit fit;
  const fs::path root(data_dir);
  std::error_code ec;
  if (!fs::is_directory(root, ec))
    throw InputError({data_dir, 0, 0}, "", "expected a directory of kernel measurements (gemm/, attention/, hbm/ CSVs; validation/data)");
  // GEMMs: 16-bit rows fit the three GEMM terms; FP8 rows then give the FP8 efficiency.
  // Rows that name this exact GPU are preferred; its family's "unspecified" rows are used only when
  // there are none (they mix clocks, power caps and software stacks).
  std::vector<GemmRow> exact, family;
  std::vector<std::string> exact_files, family_files;
  for (const auto& f : csv_files(root / "gemm")) {
    bool e = false, fam = false;
    for (auto& r : load_gemm_csv(f)) {
      if (r.gpu == gpu.name) exact.push_back(r), e = true;
      else if (gpu_row_matches(r.gpu, gpu.name)) family.push_back(r), fam = true;
    }
    if (e) exact_files.push_back(f);
    if (fam) family_files.push_back(f);
  }
  auto sixteen_bit = [](const std::vector<GemmRow>& v) {
    return std::count_if(v.begin(), v.end(), [](const GemmRow& r) { return !r.fp8 && !r.tf32; });
  };
  const bool use_exact = sixteen_bit(exact) >= 3;
  std::vector<GemmRow> gemms = use_exact ? exact : family;
  for (const auto& r : use_exact ? family : exact)
    if (r.fp8) gemms.push_back(r);  // FP8 rows of either kind: few are published
  for (const auto& f : use_exact ? exact_files : family_files) fit.files.push_back(f);
  ComputeCalibration cal = ComputeCalibration::defaults_for(gpu);
  cal.gemm_scale = 1.0;  // benchmarks, not training steps
  GemmFit g = fit_gemm(gpu, gemms);
  fit.gemm_rows = g.rows.size();
  if (g.rows.size() >= 3) {
    fit.calibration.gemm_efficiency = cal.gemm_efficiency = *g.calibration.gemm_efficiency;
    fit.calibration.gemm_dim_half = cal.gemm_dim_half = *g.calibration.gemm_dim_half;
    fit.calibration.gemm_overhead_s = cal.gemm_overhead_s = *g.calibration.gemm_overhead_s;
    for (size_t i = 0; i < g.rows.size(); ++i)
      fit.rows.push_back({"gemm", fmt::format("gemm {}x{}x{} {}", g.rows[i].shape.m, g.rows[i].shape.n, g.rows[i].shape.k, to_string(g.rows[i].dtype)),
                          g.rows[i].file, g.rows[i].line, g.after[i], g.before[i]});
  }
  if (gpu.peak_fp8_flops > 0) {
    // Efficiency each FP8 row implies once its size-dependent loss and overhead are taken out.
    std::vector<double> implied;
    std::vector<const GemmRow*> used;
    for (const auto& r : gemms) {
      if (!r.fp8) continue;
      const double dmin = double(std::min({r.shape.m, r.shape.n, r.shape.k}));
      const double t = r.time_s - cal.gemm_overhead_s;
      if (t <= 0) continue;
      implied.push_back(r.shape.flops() / (gpu.peak_fp8_flops * t) * (dmin + cal.gemm_dim_half) / dmin);
      used.push_back(&r);
    }
    if (!implied.empty()) {
      cal.gemm_fp8_efficiency = std::min(1.0, median(implied));
      fit.calibration.gemm_fp8_efficiency = cal.gemm_fp8_efficiency;
      fit.fp8_rows = implied.size();
      ComputeModel m(gpu, Precision::BF16, cal);
      ComputeCalibration catalog = ComputeCalibration::defaults_for(gpu);
      catalog.gemm_scale = 1.0;
      ComputeModel c(gpu, Precision::BF16, catalog);
      for (const auto* r : used)
        fit.rows.push_back({"fp8 gemm", fmt::format("fp8 gemm {}x{}x{}", r->shape.m, r->shape.n, r->shape.k), r->file, r->line,
                            m.gemm_time(r->shape, true) / r->time_s - 1, c.gemm_time(r->shape, true) / r->time_s - 1});
    }
  }
  // Attention: 16-bit fused kernels, per kernel, since the FlashAttention-2 class (Ampere code) and
  // Hopper-native kernels (FlashAttention-3, cuDNN) differ ~1.6x on Hopper. FLOPs counted as the
  // benchmarks count them (causal = half), so the efficiency is what the compute model applies after
  // its own causal halving. The default terms are the FlashAttention-2 class's.
  std::vector<AttentionRow> attention;
  for (const auto& f : csv_files(root / "attention")) {
    CsvTable t = load_csv(f);
    bool used = false;
    for (const auto& row : t.rows) {
      auto cell = [&](const char* c) { return t.column(c) >= 0 ? row.fields[t.column(c)] : std::string(); };
      const std::string dtype = cell("dtype"), pass = cell("pass");
      const auto kernel = attention_kernel_of_impl(cell("impl"));
      if (!gpu_row_matches(cell("gpu"), gpu.name) || !kernel || (dtype != "bf16" && dtype != "fp16")) continue;
      if (pass != "fwd" && pass != "bwd") continue;
      const double tflops = number(cell("tflops")), seq = number(cell("seq_len"));
      if (!(tflops > 0) || !(seq > 0)) continue;
      AttentionRow r{*kernel, cell("causal") == "True", pass == "bwd", seq, tflops * 1e12 / gpu.peak(Precision::BF16),
                     number(cell("head_dim")), f + "|" + pass + "|" + cell("head_dim") + "|" + dtype + "|" + cell("causal"), f, row.line};
      attention.push_back(r), used = true;
    }
    if (used) fit.files.push_back(f);
  }
  for (AttentionKernel kernel : {AttentionKernel::FA2, AttentionKernel::FA3, AttentionKernel::CuDNN})
    fit_attention_kernel(gpu, kernel, attention, fit);
  const AttentionKernelFit fa2 = fit.fa2();
  if (fa2.forward_rows) fit.calibration.attention_efficiency = fa2.efficiency.forward;
  if (fa2.backward_rows) fit.calibration.attention_backward_efficiency = fa2.efficiency.backward;
  if (fa2.causal_sweep_rows) fit.calibration.attention_seq_half_causal = fa2.efficiency.seq_half.causal;
  if (fa2.full_sweep_rows) fit.calibration.attention_seq_half_full = fa2.efficiency.seq_half.full;
  // HBM: STREAM-like copies (BabelStream copy/mul/add/triad, tensor copies): achieved / datasheet peak.
  std::vector<double> hbm;
  std::vector<KernelRowError> hbm_rows;
  for (const auto& f : csv_files(root / "hbm")) {
    CsvTable t = load_csv(f);
    bool used = false;
    for (const auto& row : t.rows) {
      auto cell = [&](const char* c) { return t.column(c) >= 0 ? row.fields[t.column(c)] : std::string(); };
      const std::string kernel = cell("kernel");
      const bool stream = kernel.find("babelstream") != std::string::npos || kernel.find("copy") != std::string::npos;
      if (!gpu_row_matches(cell("gpu"), gpu.name) || !stream || kernel.find("dot") != std::string::npos) continue;
      const double achieved = number(cell("achieved_GBps"));
      if (!(achieved > 0)) continue;
      hbm.push_back(achieved * 1e9 / gpu.hbm_bytes_per_s), used = true;
      hbm_rows.push_back({"hbm", "hbm " + kernel, f, row.line, 0, hbm.back() / gpu.hbm_efficiency - 1});
    }
    if (used) fit.files.push_back(f);
  }
  if (!hbm.empty()) {
    fit.calibration.hbm_efficiency = std::min(1.0, median(hbm)), fit.hbm_rows = hbm.size();
    for (size_t i = 0; i < hbm.size(); ++i) hbm_rows[i].error = hbm[i] / *fit.calibration.hbm_efficiency - 1;
    fit.rows.insert(fit.rows.end(), hbm_rows.begin(), hbm_rows.end());
  }
  std::sort(fit.files.begin(), fit.files.end());
  fit.files.erase(std::unique(fit.files.begin(), fit.files.end()), fit.files.end());
  return fit;
}

}  // namespace micsim
