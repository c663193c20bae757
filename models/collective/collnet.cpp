// CollNet: the switches reduce (InfiniBand SHARP, through NCCL's CollNet plugin). For an all_reduce each
// node sends its partial sum of S bytes into the fabric once and receives the total once, where a ring
// sends and receives 2(k-1)/k·S per node and a tree 2S: the network carries half as much, and the
// latency does not grow with the node count (one trip up and down the switches' aggregation tree).
// Inside each node the ranks first combine what the node sends (NCCL tuning.cc, its CollNet algorithms):
//   CollNet-Direct  every GPU owns 1/r of the buffer: a reduce-scatter over NVSwitch, the GPU's own NIC
//                   to the switch and back, an all-gather over NVSwitch: 2(r-1)/r·S per GPU on NVLink;
//   CollNet-Chain   per channel a chain of the node's GPUs up to the head GPU at the NIC and back down;
//                   the heads differ between channels (one per NIC), so on average each GPU forwards
//                   2(r-1)/r·S, the same NVLink bytes as Direct, at NCCL's chain latencies;
//   NVLS            the NVSwitch reduces and multicasts (S per GPU at NVLS's rate), SHARP between nodes.
// All run Simple and all_reduce only. Not modelled: NCCL's CollNet-Direct all_gather / reduce_scatter
// (where the plugin implements them, with one GPU per NIC; no published run measures them), and its rule
// that CollNet-Direct needs NVSwitch (every catalog instance on a fabric with SHARP has it).
#include <algorithm>
#include <cmath>

#include "models/collective/nccl_constants.hpp"

namespace micsim {

namespace {

// NCCL's latency for the algorithm (tuning.cc, v2.19 -> HEAD): baseLat is 0 for CollNet and NVLS.
double collnet_latency(const NetworkParams& net, const GroupLayout& g, NcclAlgorithm algorithm) {
  const Protocol p = Protocol::Simple;
  const int r = g.ranks_per_node;
  const double intra_lat = nccl::hw_latency(nccl::LinkClass::NVLink, algorithm, p) * net.intra_latency_scale;
  // One rank per node leaves the network's latency exposed: NCCL then charges its tree's network hop.
  const double net_hop = r == 1 ? nccl::hw_latency(nccl::LinkClass::Net, NcclAlgorithm::Tree, p)
                                : nccl::hw_latency(nccl::LinkClass::Net, algorithm, p);
  const double inter_lat = net_hop + 2 * net.inter_latency_s;  // Simple adds latencyInter again ("flush")
  switch (algorithm) {
    case NcclAlgorithm::CollNetDirect:  // + 0.4 us of arity serialisation per extra local rank
      return 2 * (std::min(1, r - 1) * intra_lat + (r - 1) * 0.4e-6) + inter_lat;
    case NcclAlgorithm::CollNetChain:
      return 2 * (r - 1) * intra_lat + inter_lat;
    default:  // NVLS across nodes
      return intra_lat + inter_lat;
  }
}

}  // namespace

std::optional<CollectiveEstimate> estimate_collnet(const NetworkParams& net, CollectiveOp op, double bytes,
                                                   const GroupLayout& g, Protocol proto, NcclAlgorithm algorithm) {
  if (!net.collnet || op != CollectiveOp::AllReduce || proto != Protocol::Simple || g.nodes < 2) return std::nullopt;
  const int r = g.ranks_per_node;
  double intra_rate = net.intra_bytes_per_s * net.intra_efficiency;
  double intra_bytes = 2.0 * (r - 1) / r * bytes;
  switch (algorithm) {
    case NcclAlgorithm::CollNetDirect:
    case NcclAlgorithm::CollNetChain: break;
    case NcclAlgorithm::NVLS:
      if (!net.nvls || r < 2) return std::nullopt;  // NVLS needs several GPUs on an NVSwitch
      intra_rate = net.intra_bytes_per_s * net.nvls_efficiency;
      intra_bytes = bytes;
      break;
    default: return std::nullopt;
  }
  CollectiveEstimate e;
  e.op = op;
  e.bytes = bytes;
  e.layout = g;
  e.algorithm = algorithm;
  e.protocol = proto;
  e.intra_bytes_per_gpu = r > 1 ? intra_bytes : 0.0;
  e.inter_bytes_per_node = bytes;
  // The ramps' step: each rank's share of the node's buffer. Inside the node the bytes move as in a
  // one-node collective over r ranks (Direct's reduce-scatter and all-gather, a chain of r, NVLS), whose
  // step is S/r, not a share of the whole group as in a ring across k nodes; each GPU also feeds the
  // network S/r of the node's partial sums.
  const double step = bytes / double(r);
  const double rating = algorithm == NcclAlgorithm::CollNetDirect ? net.collnet_direct_rating : 1.0;
  const double t_intra = r > 1 ? e.intra_bytes_per_gpu / (intra_rate * net.intra_ramp(step) * rating) : 0.0;
  // The NICs at the fabric's CollNet efficiency, shared and reached as for a ring.
  const double t_inter = bytes / (net.nic_bandwidth_for(g, net.collnet_efficiency) * net.inter_ramp(step) * rating);
  e.bottleneck = t_inter > t_intra ? Tier::Inter : Tier::Intra;
  e.latency_s = collnet_latency(net, g, algorithm) + net.crossing_latency(g.nodes) + net.call_overhead_s;
  e.time_s = e.latency_s + std::max(t_intra, t_inter);
  e.intra_time_s = t_intra;
  e.inter_time_s = t_inter;
  return e;
}

}  // namespace micsim
