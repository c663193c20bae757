#include "validation/gemm.hpp"

#include <fmt/format.h>

#include <cmath>
#include <map>

#include "models/compute/compute_model.hpp"
#include "models/io/input_file.hpp"
#include "models/io/csv.hpp"
#include "models/io/input_error.hpp"
#include "validation/least_squares.hpp"

namespace micsim {

std::vector<GemmRow> load_gemm_csv(const std::string& path) { return parse_gemm_csv(read_whole_file(path), path); }

std::vector<GemmRow> parse_gemm_csv(const std::string& text, const std::string& path) {
  CsvTable t = parse_csv(text, path);
  for (const char* need : {"m", "n", "k"})
    if (t.column(need) < 0) throw InputError({path, 1, 0}, need, "missing column (expected m, n, k and time_us or tflops)");
  if (t.column("time_us") < 0 && t.column("tflops") < 0) throw InputError({path, 1, 0}, "time_us", "expected a time_us or tflops column");
  std::vector<GemmRow> out;
  for (const auto& row : t.rows) {
    auto cell = [&](const char* c) -> std::string { return t.column(c) >= 0 ? row.fields[t.column(c)] : ""; };
    auto number = [&](const char* c, bool required) -> std::optional<double> {
      std::string s = cell(c);
      if (s.empty()) {
        if (required) throw InputError({path, row.line, 0}, c, "required value is empty");
        return std::nullopt;
      }
      char* end = nullptr;
      double v = std::strtod(s.c_str(), &end);
      if (*end != '\0' || !(v > 0) || !std::isfinite(v)) throw InputError({path, row.line, 0}, c, fmt::format("expected a number > 0, got '{}'", shorten_for_message(s)));
      return v;
    };
    // GEMM dimensions: whole numbers; 2^24 is far beyond any kernel a training step runs.
    auto dimension = [&](const char* c, bool required) -> int64_t {
      auto v = number(c, required);
      if (!v) return 1;
      if (*v > double(int64_t(1) << 24) || *v != std::floor(*v))
        throw InputError({path, row.line, 0}, c, fmt::format("expected a whole number in [1, 16777216], got '{}'", cell(c)));
      return int64_t(*v);
    };
    GemmRow g;
    g.file = path;
    g.line = row.line;
    g.name = cell("name");
    g.source = cell("source");
    g.shape = {dimension("m", true), dimension("n", true), dimension("k", true), dimension("batch", false)};
    g.gpu = cell("gpu");
    std::string dt = cell("dtype");
    if (dt.empty() || dt == "fp16") g.dtype = Precision::FP16;
    else if (dt == "bf16") g.dtype = Precision::BF16;
    else if (dt == "fp32") g.dtype = Precision::FP32;
    else if (dt == "fp8") g.dtype = Precision::BF16, g.fp8 = true;
    else if (dt == "tf32") g.dtype = Precision::FP32, g.tf32 = true;
    else throw InputError({path, row.line, 0}, "dtype", "expected fp16, bf16, fp32, fp8 or tf32, got '" + shorten_for_message(dt) + "'");
    if (auto us = number("time_us", false)) g.time_s = *us * 1e-6;
    else g.time_s = g.shape.flops() / (*number("tflops", true) * 1e12);
    // A measurement a GPU can produce: below 1,000 s and below 10 PFLOPS (no GPU comes near it).
    const double tflops = g.shape.flops() / g.time_s / 1e12;
    if (!(g.time_s < 1e3) || !(tflops < 1e4))
      throw InputError({path, row.line, 0}, t.column("time_us") >= 0 ? "time_us" : "tflops",
                       fmt::format("{:.3g} s for this shape is {:.3g} TFLOPS: not a possible GPU measurement", g.time_s, tflops));
    out.push_back(g);
  }
  if (out.empty()) throw InputError({path, 1, 0}, "", "no GEMM rows");
  return out;
}

GemmFit fit_gemm(const GpuSpec& gpu, const std::vector<GemmRow>& rows) {
  GemmFit fit;
  for (const auto& r : rows)
    if (gpu.supports(r.dtype) && !r.fp8 && !r.tf32) fit.rows.push_back(r);
  // Kernel benchmarks: no sustained-training scale (that one is fitted on training runs).
  ComputeCalibration base = ComputeCalibration::defaults_for(gpu);
  base.gemm_scale = 1.0;
  auto time_with = [&](const ComputeCalibration& c, const GemmRow& r) { return ComputeModel(gpu, r.dtype, c).gemm_time(r.shape); };
  for (const auto& r : fit.rows) fit.before.push_back(time_with(base, r) / r.time_s - 1);
  std::vector<FitParameter> params = {{"gemm_efficiency", base.gemm_efficiency, 0.05, 1.0},
                                      {"gemm_dim_half", std::max(1.0, base.gemm_dim_half), 0.1, 1e5},
                                      {"gemm_overhead_us", base.gemm_overhead_s * 1e6, 0.01, 1e4}};
  auto apply = [&](const std::vector<double>& v) {
    ComputeCalibration c = base;
    c.gemm_efficiency = v[0];
    c.gemm_dim_half = v[1];
    c.gemm_overhead_s = v[2] * 1e-6;
    return c;
  };
  ComputeCalibration c = base;
  if (fit.rows.size() >= params.size()) {
    FitOutcome o = fit_least_squares(params, [&](const std::vector<double>& v) {
      ComputeCalibration cc = apply(v);
      std::vector<double> r;
      for (const auto& row : fit.rows) r.push_back(std::log(time_with(cc, row) / row.time_s));
      return r;
    });
    fit.iterations = o.iterations;
    c = apply(o.values);
  }
  for (const auto& r : fit.rows) fit.after.push_back(time_with(c, r) / r.time_s - 1);
  fit.calibration.gemm_efficiency = c.gemm_efficiency;
  fit.calibration.gemm_dim_half = c.gemm_dim_half;
  fit.calibration.gemm_overhead_s = c.gemm_overhead_s;
  return fit;
}

std::vector<NamedGemm> workload_gemms(const Workload& w) {
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t>, NamedGemm> uniq;
  const char* fwd_names[] = {"qkv", "attn_out", "ffn_up", "ffn_down"};
  for (const auto& u : w.units) {
    std::string unit = u.kind == UnitKind::Block ? "block" : u.kind == UnitKind::Head ? "head" : "embedding";
    auto add = [&](const std::vector<Gemm>& gs, const char* pass) {
      for (size_t i = 0; i < gs.size(); ++i) {
        const Gemm& g = gs[i];
        auto key = std::make_tuple(g.m, g.n, g.k, g.batch);
        auto& e = uniq[key];
        if (e.count == 0) {
          std::string base = u.kind == UnitKind::Block && std::string(pass) == "fwd" && i < 4 ? fwd_names[i]
                                                                                            : fmt::format("gemm{}", i);
          e.name = fmt::format("{}_{}_{}", unit, pass, base);
          e.shape = g;
        }
        e.count++;
      }
    };
    add(u.forward.gemms, "fwd");
    add(u.backward.gemms, "bwd");
  }
  // Attention's batched GEMMs (QK^T and PV per head) for unfused attention.
  if (!w.options.flash_attention) {
    const int64_t s = w.options.seq_len, dh = w.model.head_dim(), b = w.options.micro_batch * w.model.heads;
    uniq[{s, s, dh, b}] = {"attn_scores_qk", {s, s, dh, b}, w.model.layers};
    uniq[{s, dh, s, b}] = {"attn_context_pv", {s, dh, s, b}, w.model.layers};
  }
  std::vector<NamedGemm> out;
  for (auto& [k, v] : uniq) out.push_back(v);
  return out;
}

}  // namespace micsim
