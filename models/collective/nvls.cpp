// NVLS (NVLink SHARP, NVSwitch gen3): the switch reduces and multicasts, so for all_reduce each GPU
// sends S once and receives S once instead of 2(n-1)/n·S each way. One node: NVLS; across nodes:
// NVLS-Tree (NVLS inside, a tree between nodes). Simple protocol only.
#include <algorithm>
#include <cmath>

#include "models/collective/nccl_constants.hpp"

namespace micsim {

std::optional<CollectiveEstimate> estimate_nvls(const NetworkParams& net, CollectiveOp op, double bytes,
                                                const GroupLayout& g, Protocol proto) {
  if (!net.nvls || op != CollectiveOp::AllReduce || proto != Protocol::Simple) return std::nullopt;
  if (g.ranks_per_node < 2) return std::nullopt;  // NVLS needs several GPUs on the switch
  const int k = g.nodes;
  CollectiveEstimate e;
  e.op = op;
  e.bytes = bytes;
  e.layout = g;
  e.algorithm = k == 1 ? NcclAlgorithm::NVLS : NcclAlgorithm::NVLSTree;
  e.protocol = proto;
  e.intra_bytes_per_gpu = bytes;
  e.inter_bytes_per_node = k > 1 ? (k == 2 ? bytes : 2.0 * bytes) : 0.0;
  const double step = bytes / double(g.ranks);
  const double eff_intra = net.intra_ramp(step);
  const double eff_inter = net.inter_ramp(step);
  const double t_intra = bytes / (net.intra_bytes_per_s * net.nvls_efficiency * eff_intra);
  // NVLS-tree's tree across nodes.
  const double t_inter = k > 1 ? e.inter_bytes_per_node / (net.inter_bandwidth_for(g) * eff_inter * net.tree_efficiency_for(k)) : 0.0;
  e.bottleneck = t_inter > t_intra ? Tier::Inter : Tier::Intra;
  double intra_lat = nccl::hw_latency(nccl::LinkClass::NVLink, NcclAlgorithm::NVLS, proto) * net.intra_latency_scale;
  if (k == 1) {
    e.latency_s = intra_lat;
  } else {
    double inter_lat = nccl::hw_latency(nccl::LinkClass::Net, NcclAlgorithm::NVLSTree, proto) + 2 * net.inter_latency_s;
    e.latency_s = intra_lat + 2.0 * std::log2(double(k)) * inter_lat + net.crossing_latency(k);
  }
  e.latency_s += net.call_overhead_s;
  e.time_s = e.latency_s + std::max(t_intra, t_inter);
  e.intra_time_s = t_intra;
  e.inter_time_s = t_inter;
  return e;
}

}  // namespace micsim
