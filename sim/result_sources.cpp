#include "sim/result_sources.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "models/compute/jitter.hpp"

namespace micsim {

namespace {

// The cluster: instance, network and fabric, and (pipelining) which stage was simulated.
void cluster_sources(const PreparedSimulation& p, const std::string& engine, std::vector<std::string>& out) {
  const Scenario& sc = p.scenario;
  out.push_back(fmt::format("instance {}: {}", sc.cluster.instance.name, sc.cluster.instance.source));
  out.push_back(fmt::format("network: {}; fabric {}: {}", p.network.source, sc.cluster.instance.network.fabric.name,
                                  sc.cluster.instance.network.fabric.source));
  const double worst_uplink = p.uplink_slowdown.empty() ? 1.0 : *std::max_element(p.uplink_slowdown.begin(), p.uplink_slowdown.end());
  if (engine == "analytic" && worst_uplink > 1.0)
    out.push_back(fmt::format("fabric: {} nodes per leaf, {}:1 uplinks, {} placement: cross-leaf ring transfers up to "
                                    "{:.2f}x longer (uplinks shared max-min fairly by all concurrent rings)",
                                    sc.cluster.fabric.nodes_per_leaf, sc.cluster.fabric.oversubscription,
                                    sc.cluster.fabric.scattered ? "scattered" : "packed", worst_uplink));
  if (!p.stages.empty()) {
    // Which stage was simulated, and how the others compare (they set its bubble).
    std::string list;
    for (const StageSummary& s : p.stages) {
      const std::string name = s.stages > 1 ? fmt::format("stage {} and {} alike", s.stage, s.stages - 1) : fmt::format("stage {}", s.stage);
      list += fmt::format("{}{} ({} blocks{}{}): {:.3f} s per micro-batch, step {:.3f} s, peak {:.2f} GiB", list.empty() ? "" : "; ", name,
                          s.layers, s.embedding ? " + embedding" : "", s.head ? " + head" : "", s.slot_s, s.step_s,
                          s.peak_bytes / double(1 << 30));
    }
    out.push_back(fmt::format("pipeline: every distinct stage built, costed and run, the slowest sets the step: stage {} "
                                    "with this engine; a stage's bubble = the other stages' micro-batch times / virtual stages; "
                                    "analytic figures per stage: {}",
                                    p.stage, list));
  }
}

// The compute stream: the GPU's calibration, what overlapped collectives cost it, allocator pressure,
// jitter and stragglers.
void compute_sources(const PreparedSimulation& p, const std::string& engine, std::vector<std::string>& out) {
  const Scenario& sc = p.scenario;
  out.push_back(fmt::format("compute: {}", p.compute_calibration.source));
  {
    // What the overlapped collectives move through this GPU's memory, charged to its compute stream.
    double bytes = 0, seconds = 0;
    for (const Task& t : p.graph.tasks)
      if (t.kind == TaskKind::CollectiveMemoryTraffic) bytes += double(p.graph.compute_ops[t.op].params), seconds += p.costs.compute_s[t.op];
    const int built = std::max(1, p.graph.micro_steps);
    if (bytes > 0)
      out.push_back(fmt::format("collectives' HBM traffic: {:.1f} GB per micro-step through each GPU's memory, {:.1f} ms of its compute "
                                      "stream (ring collectives write what arrives and read what they forward or reduce; x {:g}, "
                                      "compute.collective_hbm_traffic; docs/model.md sec 2.5)",
                                      bytes / built / 1e9, 1e3 * seconds / built, p.compute_calibration.collective_hbm_traffic));
  }
  if (p.compute_slowdown > 1.0) {
    // The simulated stage's own memory use (p.memory is the fullest stage's under pipelining).
    double used = p.memory_utilisation;
    const double usable = p.memory.capacity_bytes - p.memory.reserve_bytes;
    for (const StageSummary& s : p.stages)
      if (s.stage == p.stage && usable > 0) used = s.peak_bytes / usable;
    out.push_back(fmt::format("compute {:.1f} % slower from allocator pressure at {:.0f} % memory use (FSDP paper sec 5.4; "
                                    "onset and slope fitted on MosaicML runs)", 100 * (p.compute_slowdown - 1), 100 * used));
  }
  if (p.compute_calibration.jitter_cv > 0 && p.layout.world > 1) {
    const int met = p.sync_ranks, groups = jitter_sync_groups(p);
    const int64_t k = sc.grad_accumulation_steps();
    // The step-end term only where groups meet once per step (jitter_compute_factor).
    const std::string step_end = groups > 1 ? fmt::format("; the {} such groups meet once per step, after {} micro-step(s), and wait "
                                                          "for the slowest group", groups, k) : "";
    const std::string formula = groups > 1 ? fmt::format("(E[max of {}] + sd[max of {}] x E[max of {}] / sqrt {})", met, met, groups, k)
                                           : fmt::format("E[max of {}]", met);
    const ComputeCalibration& c = p.compute_calibration;
    // Where the CV depends on the micro-step's length, say over what window it was taken.
    const std::string cv = c.jitter_window_exponent > 0
                               ? fmt::format("CV {:.4g} over a {:.3g}-s micro-step = jitter_cv {:.4g} x (1 s / max(T, {:g} s))^{:.3g}",
                                             effective_jitter_cv(p), micro_step_compute_seconds(p), c.jitter_cv, kJitterShortestWindowS,
                                             c.jitter_window_exponent)
                               : fmt::format("jitter_cv {:.4g}", c.jitter_cv);
    if (engine == "analytic")
      out.push_back(fmt::format("jitter: a rank meets {} ranks per micro-step and runs at the slowest's pace{}: compute x {:.4f} "
                                      "({} x {}, standard normals; what communication hides is absorbed; docs/model.md sec 2.6)",
                                      met, step_end, analytic_jitter_factor(p), cv, formula));
    else
      out.push_back(fmt::format("jitter: each node's compute x (1 + {} x the largest of its GPUs' normal draws), drawn per micro-step "
                                      "with {}; the {} ranks a micro-step meets run at their slowest's pace (what_if.jitter_seed; docs/model.md sec 2.6)",
                                      cv,
                                      p.scenario.what_if.jitter_seed ? fmt::format("seed {}", *p.scenario.what_if.jitter_seed)
                                                                     : std::string("micsim's fixed seed"),
                                      p.sync_ranks));
  }
  if (const double f = straggler_factor(p); f > 0) {
    const ComputeCalibration& c = p.compute_calibration;
    out.push_back(fmt::format("stragglers: {:.3g} stalls per GPU-hour of {:.0f} ms each (rare host stalls, Poisson); {:.0f} points per step "
                                    "where compute waits for a collective among {} ranks, {:.3g} s of compute per step: compute x {:.4f} "
                                    "(straggler_stalls_per_gpu_hour, straggler_stall_ms; {}; docs/model.md sec 2.6)",
                                    c.straggler_rate_per_s * 3600, c.straggler_stall_s * 1e3, p.sync_points, p.sync_ranks, p.step_compute_s,
                                    1 + f, engine == "analytic" ? "expected value" : "expected value, the same on every node"));
  }
}

// The run's settings: framework profile, model, collective model, precision and optimizer choices,
// recompute, FLOP convention, the interval, memory and price.
void run_sources(const PreparedSimulation& p, const std::string& interval_source, std::vector<std::string>& out) {
  const Scenario& sc = p.scenario;
  const FrameworkProfile& fw = *sc.strategy.framework;
  const std::string framework_name = fw.name + (sc.strategy.framework_version.empty() ? "" : " " + sc.strategy.framework_version);
  if (!fw.is_ideal()) {
    out.push_back(fmt::format("framework {}: {}", framework_name, fw.description));
    for (const auto& [mechanism, source] : fw.sources) out.push_back(fmt::format("framework {} {}: {}", fw.name, mechanism, source));
  }
  out.push_back(fmt::format("model {}: {}", sc.model.name, sc.model.source.empty() ? "inline spec" : sc.model.source));
  out.push_back("collective costs: NCCL tuning.cc latency/protocol model (docs/reference/nccl-and-compute.md §3)");
  if (sc.strategy.reduce_precision && *sc.strategy.reduce_precision != sc.training.precision)
    out.push_back(fmt::format("gradient reductions in {} ({} bytes per element on the wire and in the reduction's input "
                                    "buffer; strategy.reduce_dtype)",
                                    to_string(*sc.strategy.reduce_precision), bytes_per_element(*sc.strategy.reduce_precision)));
  if (optimizer_implementation_of(sc) == OptimizerImplementation::Foreach)
    out.push_back(fmt::format("optimizer: PyTorch's multi-tensor AdamW (foreach, from the {}), one pass over the fp32 "
                                    "state per arithmetic step: 84 bytes per parameter against the fused kernel's 32 (torch/optim/adam.py "
                                    "_multi_tensor_adam; docs/model.md sec 2.3)", optimizer_implementation_origin(sc)));
  if (p.workload.options.fp8_all_gather)
    out.push_back("FP8 all-gather of the blocks' linear weights (strategy.fp8_all_gather): 1 byte per weight on the wire and in "
                        "the gathered buffer, each rank casting only its shard (torchao float8 fsdp_pre_all_gather; Megatron-FSDP "
                        "fp8_param_gather)");
  if (sc.training.checkpointing == Checkpointing::Full || sc.training.checkpointing == Checkpointing::SelectiveLayer) {
    const WorkloadOptions& wo = p.workload.options;
    const char* from = sc.training.recompute_early_stop ? "training.recompute_early_stop" : "framework profile";
    out.push_back(
        recompute_skips_mlp_down(wo)
            ? fmt::format("recompute: a checkpointed block stops at the last tensor its backward needs, its MLP down GEMM and residual "
                          "add not rerun (PyTorch >= 2.1 non-reentrant checkpoint, early stop; {})", from)
        : wo.recompute_early_stop
            ? fmt::format("recompute: the whole block forward, early stop notwithstanding: an eager FP8 linear saves after its GEMM ({})", from)
            : fmt::format("recompute: the whole block forward (reentrant checkpoint or PyTorch < 2.1; {})", from));
  }
  if (sc.training.fp8)
    out.push_back(sc.training.fp8_recipe == Fp8Recipe::Delayed
                            ? "FP8 casts, delayed scaling (training.fp8_recipe): one fused cast-transpose of each GEMM's input and weight "
                              "in forward (4 bytes per element), the incoming gradient only in backward (Transformer Engine "
                              "DelayedScaling, fp8_cast_transpose_fused; docs/model.md sec 1.3)"
                            : "FP8 casts, dynamic scaling (training.fp8_recipe): an amax pass and a scaled copy of each GEMM's input and "
                              "weight (5 bytes per element), twice that in backward (torchao float8 tensorwise, Transformer Engine current "
                              "scaling; docs/model.md sec 1.3)");
  out.push_back("FLOPs: 6N + 12·L·h·s per token (PaLM convention, non-causal attention, no recompute)");
  out.push_back(interval_source);
  out.push_back("activations: Korthikanti et al. 2022 (arXiv 2205.05198), generalised");
  // How the memory figure has fared against published peak memory of the same kind of run (validate
  // --megatron: torchtitan's tables, the caching allocator's reserved peak), so a planner leaves room;
  // tests/test_parallelism.cpp checks the quoted ranges against the rows.
  if (sc.parallelism.pp > 1 || sc.parallelism.tp > 1)
    out.push_back(fmt::format("memory with {}: torchtitan's published FSDP2 runs peaked above micsim's reserved estimate "
                                    "(tensor-parallel 70B rows 8-14 %, pipeline 405B rows 16-25 %; micsim validate --megatron): "
                                    "leave that headroom", sc.parallelism.pp > 1 ? "pipeline parallelism" : "tensor parallelism"));
  if (sc.cluster.instance.price_usd_per_hour)
    out.push_back(fmt::format("price: {} ({})", sc.cluster.instance.name, sc.cluster.instance.price_note));

}

}  // namespace

std::vector<std::string> result_sources(const PreparedSimulation& p, const std::string& engine, const std::string& interval_source) {
  std::vector<std::string> out;
  cluster_sources(p, engine, out);
  compute_sources(p, engine, out);
  run_sources(p, interval_source, out);
  return out;
}

}  // namespace micsim
