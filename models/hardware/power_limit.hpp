#pragma once
// A GPU under a power limit below its TDP (nvidia-smi -pl; Meta's Grand Teton H100 run at 500 W of 700)
// lowers its SM clocks once compute-bound kernels would draw more: GEMMs and attention slow down, HBM-bound
// kernels barely do (their power is in the memory, not the SMs). The rate at a limit is read off the GPU's
// measured power curve (catalog `power_curve`), linearly between its points.
#include "models/hardware/hardware.hpp"

namespace micsim {

// The limit the GPU runs under: its power_limit_w, or its TDP where none is set (0 when neither is known).
double effective_power_limit_w(const GpuSpec& gpu);

// Compute-bound throughput at the GPU's power limit / at its TDP (1 with no limit set, or at the TDP).
double power_limited_compute_rate(const GpuSpec& gpu);

// Why `limit_w` cannot be applied to `gpu` (empty when it can): no TDP or no measured curve, or a limit
// outside [lowest measured point, TDP].
std::string power_limit_problem(const GpuSpec& gpu, double limit_w);

}  // namespace micsim
