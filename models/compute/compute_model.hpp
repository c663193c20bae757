#pragma once
// How long a GPU takes for the work of a pass: GEMMs at a shape-dependent fraction of peak,
// attention kernels at their own efficiency, memory-bound ops at HBM speed, plus a fixed cost per
// kernel. The constants are a documented default (from the GPU catalog); `micsim calibrate --gemm`
// replaces them with a fit to measured GEMMs.
#include <algorithm>
#include <cstdint>
#include <string>

#include "models/hardware/hardware.hpp"
#include "models/workload/workload.hpp"

namespace micsim {

enum class Optimizer { Adam, Lamb, Sgd };
const char* to_string(Optimizer o);
// How the optimizer's update runs (training.optimizer_implementation): fused = one kernel reads and
// writes each state once (torch fused=True, torchtitan's default, DeepSpeed FusedAdam, apex);
// foreach = PyTorch's multi-tensor path, one pass over the fp32 state per arithmetic step (the default
// of torch.optim.Adam/AdamW on CUDA when neither foreach nor fused is given).
enum class OptimizerImplementation { Fused, Foreach };
const char* to_string(OptimizerImplementation i);

struct ComputeCalibration {
  double gemm_efficiency = 0.8;       // large-GEMM fraction of peak
  double gemm_dim_half = 32;          // efficiency × d/(d + dim_half) for the smallest GEMM dimension d
  double gemm_overhead_s = 8e-6;      // wave quantisation / tail per GEMM (A100 cublasLt 1024^3 and 2048^3 rows: ~9.5 us)
  double attention_efficiency = 0.4;  // attention kernels' fraction of peak (forward)
  double attention_backward_efficiency = 0;  // backward kernels' fraction of peak (0 = as forward)
  AttentionSeqHalf attention_seq_half;        // both at long sequences; shorter ones x S / (S + half)
  double gemm_fp8_efficiency = 0;     // large FP8 GEMMs' fraction of the FP8 peak (0 = gemm_efficiency)
  double flash_backward_extra = 0.25; // FlashAttention backward recomputes QK^T: +25 % of its matmul work
  double hbm_efficiency = 0.8;        // memory-bound kernels' fraction of HBM bandwidth
  double kernel_overhead_s = 2e-6;    // per launch of a memory-bound kernel (launch gaps)
  // Fraction of compute speed lost while a collective runs on the same GPU (NCCL kernels take SMs and
  // HBM bandwidth: 16-32 of an A100's 108 SMs). Measured: 0.16 (Lee et al. 2025, arXiv 2507.03114,
  // compute 18.9 % slower on average under overlap) to 0.30 (Echo, arXiv 2412.12487, 1.38-1.48x);
  // fitted on the training corpus under that prior (micsim validate --corpus, docs/model.md sec 2.5).
  // Applied by both engines; calibratable.
  double interference = 0.231;
  // A collective's own HBM traffic (models/collective/hbm_traffic.hpp: NCCL's ring writes what arrives
  // and reads what it forwards or reduces) is charged to the compute stream at the memory-bound rate,
  // times this fraction (1: it never shares HBM with the overlapped kernels; 0: free). Training runs
  // lose ~10 ms per billion parameters per FSDP micro-batch that compute and link time do not explain
  // (docs/model.md sec 2.5); calibratable.
  double collective_hbm_traffic = 1.0;
  // Allocator pressure: near capacity the caching allocator retries and defragments (PyTorch FSDP paper
  // sec 3.4 and 5.4), slowing forward and backward. Compute takes 1 + slowdown x max(0, u - onset) times
  // longer at memory utilisation u (peak / usable). Defaults read off MosaicML's FSDP runs, whose MFU
  // error grew with utilisation (<0.5: 0 %, 0.7-0.85: +5 %, 0.85-1: +9 %; validation/data).
  // Eager (uncompiled) Llama blocks move extra bytes through HBM (decomposed norms, rotary, SwiGLU;
  // counted per op in models/workload); this scales that count (fitted on the training corpus).
  double eager_scale = 1.0;
  // Attention in a training step runs slower than the same kernel in a benchmark (layout copies of
  // q/k/v, the log-sum-exp, masking and dropout around it): its time is multiplied by this (fitted on
  // the training corpus; 1 = the kernel benchmark).
  double attention_scale = 1.1;  // a GPU without its own fit (catalog sustained_attention_scale: A100 1.000, Hopper 0.985, corpus fit)
  // The kernel the stack runs (defaults_for sets its efficiencies) and, for FlashAttention in Triton,
  // a factor on the paper's FA2 ratios: fitted on the corpus rows that run it (MosaicML's), 1 where
  // none is in the fit (held out, the paper's ratios stand alone).
  AttentionKernel attention_kernel = AttentionKernel::FA2;
  double triton_attention_scale = 0.967;  // micsim validate --corpus: fit on all rows (MosaicML's 216 run it)
  // GEMMs sustained through a training step (power-capped clocks, cache interference, other kernels
  // around them) against the kernel benchmarks the GEMM terms are fitted on: their efficiency is
  // multiplied by this (per GPU generation, fitted on the training corpus).
  double gemm_scale = 1.0;
  // A GPU run below its TDP (nvidia-smi -pl) clocks down: GEMMs and attention run at this fraction of
  // their rate at TDP (its measured power curve, models/hardware/power_limit.hpp; 1 without a limit).
  // HBM-bound kernels keep theirs. Kernel terms calibrated on the user's own GPUs already include
  // their limit, so such a calibration sets this back to 1.
  double power_rate = 1.0;
  // Host (CPU) time to launch one kernel in eager PyTorch: a pass takes at least kernels x this, the
  // launch-bound regime of small models and micro-batches (fitted on the training corpus).
  double host_launch_s = 0.0;
  // Synchronisation jitter: a rank's compute between two synchronisations varies with this coefficient
  // of variation; every collective waits for its slowest member, so a rank that meets N ranks within a
  // micro-step runs at the pace of the slowest of N draws (jitter_sync_ranks; fitted on the corpus,
  // whose scaling series determine it).
  double jitter_cv = 0.0380;      // micsim validate --corpus: fit on all rows (scaling series included)
  // How that CV shrinks over longer micro-steps: noise that decorrelates within about a second averages
  // out over a longer interval, CV(T) = jitter_cv x (1 s / max(T, 0.1 s))^exponent (jitter_cv_over_window,
  // models/compute/jitter.hpp). 0: the same CV whatever the micro-step's length.
  double jitter_window_exponent = 0.0;
  // Stragglers (models/compute/stragglers.hpp): rare long stalls of a GPU's host, Poisson per GPU at
  // this rate, each this long; every synchronisation waits for them. Off (0) by default: fitted with the
  // corpus they did not help held out (validate --corpus --fit-stragglers; docs/model.md sec 2.6).
  double straggler_rate_per_s = 0.0;
  double straggler_stall_s = 0.0;
  double memory_pressure_onset = 0.5;
  double memory_pressure_slowdown = 0.090;  // refitted with the corpus (micsim validate --corpus)
  double memory_pressure_factor(double utilisation) const {
    return 1.0 + memory_pressure_slowdown * std::max(0.0, utilisation - memory_pressure_onset);
  }
  std::string source = "default";     // where these numbers come from (catalog default or calibration file)

  // The GPU's catalog terms, attention at the efficiency of the kernel the stack runs (its
  // FlashAttention-2 terms where that kernel was not measured on this GPU, said in `source`).
  static ComputeCalibration defaults_for(const GpuSpec& gpu, AttentionKernel kernel = AttentionKernel::FA2);
};

class ComputeModel {
 public:
  ComputeModel(const GpuSpec& gpu, Precision precision, ComputeCalibration cal);

  double gemm_time(const Gemm& g, bool fp8 = false) const;
  double pass_time(const PassWork& w, bool is_backward, bool flash_attention) const;
  // Optimizer update of `local_params` parameters: memory-bound (reads and writes master weights,
  // optimizer states, gradients; writes the low-precision copy).
  double optimizer_time(int64_t local_params, Optimizer opt, OptimizerImplementation impl = OptimizerImplementation::Fused) const;
  // Device-to-device copy (the hierarchical all-gather's re-arrangement step).
  double copy_time(double bytes) const;
  // HBM bytes that overlapped collectives read and write, as compute-stream time (collective_hbm_traffic).
  double collective_traffic_time(double hbm_bytes) const;
  double peak_flops() const { return peak_; }
  const ComputeCalibration& calibration() const { return cal_; }

 private:
  double peak_;
  double peak_fp8_;
  double hbm_;
  Precision precision_;
  ComputeCalibration cal_;
};

}  // namespace micsim
