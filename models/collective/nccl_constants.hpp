#pragma once
// NCCL's analytic-model constants (src/graph/tuning.cc, v2.23 -> HEAD v2.30), as recorded in
// docs/reference/nccl-and-compute.md §3. Latencies in seconds, bandwidths in bytes/s.
#include "models/collective/collective.hpp"

namespace micsim::nccl {

enum class LinkClass { NVLink, PCI, Net };

double base_latency(NcclAlgorithm a, Protocol p);              // baseLat
double hw_latency(LinkClass l, NcclAlgorithm a, Protocol p);   // hwLat
double ll_max_bus_bw(GpuArch arch, int nodes, bool amd_cpu);   // llMaxBws (across nodes: by host CPU)
double nvls_efficiency(GpuArch arch);                          // nvlsEfficiency
double per_channel_ring_ll128_bw(GpuArch arch);                // perChMaxRingLL128Bws
double per_channel_tree_bw(GpuArch arch, int nodes);           // perChMaxTreeBws
double per_channel_tree_ll128_bw(GpuArch arch, int nodes);     // perChMaxTreeLL128Bws
double tree_correction_factor(Protocol p, double bytes);       // treeCorrectionFactor[p][log2(bytes/64)]
double ring_plateau_factor(GpuArch arch);                      // Ring+Simple all_reduce across nodes
constexpr double kLL128Efficiency = 0.92;                       // Ring LL128: busBw *= 0.92
constexpr double kLLEfficiency = 0.5;                          // LL: half of every 8-byte line is flags

}  // namespace micsim::nccl
