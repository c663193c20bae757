#include "models/collective/nccl_constants.hpp"

#include <algorithm>
#include <cmath>

namespace micsim::nccl {

static int proto_index(Protocol p) { return p == Protocol::LL ? 0 : p == Protocol::LL128 ? 1 : 2; }

double base_latency(NcclAlgorithm a, Protocol p) {
  // baseLat (us), v2.23 -> HEAD: Tree 6.8/14.0/8.4, Ring 6.6/14.0/8.4, NVLS, NVLSTree and CollNet 0.
  static const double tree[3] = {6.8, 14.0, 8.4}, ring[3] = {6.6, 14.0, 8.4};
  switch (a) {
    case NcclAlgorithm::Tree: return tree[proto_index(p)] * 1e-6;
    case NcclAlgorithm::Ring: return ring[proto_index(p)] * 1e-6;
    default: return 0;
  }
}

double hw_latency(LinkClass l, NcclAlgorithm a, Protocol p) {
  // hwLat (us), v2.23 -> HEAD. NVLS, NVLS-Tree and CollNet run Simple only; their entries are Simple's.
  static const double nvl_tree[3] = {0.6, 1.25, 4.0}, nvl_ring[3] = {0.6, 1.9, 3.4};
  static const double pci_tree[3] = {1.0, 1.9, 4.0}, pci_ring[3] = {1.0, 2.5, 5.7};
  static const double net_tree[3] = {5.0, 8.5, 14.0}, net_ring[3] = {2.7, 4.0, 14.0};
  const int i = proto_index(p);
  double us = 0;
  switch (l) {
    case LinkClass::NVLink:
      switch (a) {
        case NcclAlgorithm::Ring: us = nvl_ring[i]; break;
        case NcclAlgorithm::Tree: us = nvl_tree[i]; break;
        case NcclAlgorithm::NVLS:
        case NcclAlgorithm::NVLSTree: us = 25.0; break;
        case NcclAlgorithm::CollNetDirect: us = 3.7; break;
        case NcclAlgorithm::CollNetChain: us = 2.8; break;
      }
      break;
    case LinkClass::PCI:
      us = a == NcclAlgorithm::Ring ? pci_ring[i] : pci_tree[i];
      break;
    case LinkClass::Net:
      switch (a) {
        case NcclAlgorithm::Ring: us = net_ring[i]; break;
        case NcclAlgorithm::Tree: us = net_tree[i]; break;
        case NcclAlgorithm::NVLS: us = 18.0; break;
        case NcclAlgorithm::NVLSTree: us = 14.0; break;
        case NcclAlgorithm::CollNetDirect: us = 31.0; break;
        case NcclAlgorithm::CollNetChain: us = 30.0; break;
      }
      break;
  }
  return us * 1e-6;
}

static int node_column(int nodes) { return nodes <= 1 ? 0 : nodes == 2 ? 1 : 2; }

double ll_max_bus_bw(GpuArch arch, int nodes, bool amd_cpu) {
  // llMaxBws (GB/s). One node: the GPU's entry. Across nodes NCCL indexes the table by the host CPU instead
  // (tuning.cc: "for multi-node, we look at CPU type"; the Intel and AMD rows at 2 and >= 3 nodes).
  if (nodes <= 1)
    return (arch == GpuArch::Volta ? 39.0 : arch == GpuArch::Ampere ? 87.7 : arch == GpuArch::Hopper ? 141.0 : 282.0) * 1e9;
  static const double intel[2] = {39.0, 20.4}, amd[2] = {22.5, 19.0};
  return (amd_cpu ? amd : intel)[nodes == 2 ? 0 : 1] * 1e9;
}

double nvls_efficiency(GpuArch arch) {
  // nvlsEfficiency (src/tuning/nvls.cc, earlier tuning.cc): NVLS's bus bandwidth / NVLink's in NCCL's model.
  return arch == GpuArch::Hopper ? 0.85 : arch == GpuArch::Blackwell ? 0.74 : 0.0;
}

double per_channel_ring_ll128_bw(GpuArch arch) {
  return (arch == GpuArch::Hopper ? 36.7 : arch == GpuArch::Blackwell ? 40.0 : 20.0) * 1e9;
}

double per_channel_tree_bw(GpuArch arch, int nodes) {
  static const double volta[3] = {26.5, 18.5, 10.0}, ampere[3] = {24.0, 23.6, 17.8},
                      hopper[3] = {38.7, 41.4, 36.0}, blackwell[3] = {70.0, 42.8, 24.0};
  const double* row = arch == GpuArch::Volta ? volta : arch == GpuArch::Ampere ? ampere
                      : arch == GpuArch::Hopper ? hopper : blackwell;
  return row[node_column(nodes)] * 1e9;
}

double per_channel_tree_ll128_bw(GpuArch arch, int nodes) {
  static const double old[3] = {20.0, 20.0, 20.0}, hopper[3] = {36.7, 36.7, 29.0},
                      blackwell[3] = {55.6, 31.67, 20.0};
  const double* row = arch == GpuArch::Hopper ? hopper : arch == GpuArch::Blackwell ? blackwell : old;
  return row[node_column(nodes)] * 1e9;
}

double tree_correction_factor(Protocol p, double bytes) {
  static const double ll[24] = {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0};
  static const double ll128[24] = {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0};
  static const double simple[24] = {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9};
  int idx = bytes <= 64 ? 0 : std::min(23, int(std::floor(std::log2(bytes / 64.0))));
  const double* row = p == Protocol::LL ? ll : p == Protocol::LL128 ? ll128 : simple;
  return row[idx];
}

double ring_plateau_factor(GpuArch arch) { return arch == GpuArch::Volta ? 1.9 : 1.4; }

}  // namespace micsim::nccl
