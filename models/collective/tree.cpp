// Tree (all_reduce only): a chain inside each node, a double binary tree across nodes. Each GPU in a
// chain sends S up (reduce) and S down (broadcast). Across nodes each tree carries half the data;
// with two nodes every node sends S, with more the interior nodes send 2S. That is why two-node
// all_reduce beats the ring (whose node egress is 2(n-1)/n·S) and shows busbw above line rate.
#include <algorithm>
#include <cmath>

#include "models/collective/nccl_constants.hpp"

namespace micsim {

std::optional<CollectiveEstimate> estimate_tree(const NetworkParams& net, CollectiveOp op, double bytes,
                                                const GroupLayout& g, Protocol proto) {
  if (op != CollectiveOp::AllReduce || g.ranks <= 1) return std::nullopt;
  const int k = g.nodes, r = g.ranks_per_node;
  CollectiveEstimate e;
  e.op = op;
  e.bytes = bytes;
  e.layout = g;
  e.algorithm = NcclAlgorithm::Tree;
  e.protocol = proto;
  e.intra_bytes_per_gpu = r > 1 ? 2.0 * bytes : 0.0;
  e.inter_bytes_per_node = k > 1 ? (k == 2 ? bytes : 2.0 * bytes) : 0.0;
  // Pipelined like a ring: the bandwidth ramp uses the per-rank share S/n.
  const bool ramped = proto != Protocol::LL;
  const double step = bytes / double(g.ranks);
  const double eff_intra = ramped ? net.intra_ramp(step) : 1.0;
  const double eff_inter = ramped ? net.inter_ramp(step) : 1.0;
  const double t_intra = e.intra_bytes_per_gpu / (net.intra_bytes_per_s * net.intra_efficiency * eff_intra);
  const double t_inter = k > 1 ? e.inter_bytes_per_node / (net.inter_bandwidth_for(g) * eff_inter * net.tree_efficiency_for(k)) : 0.0;
  e.bottleneck = t_inter > t_intra ? Tier::Inter : Tier::Intra;
  double t_bw = std::max(t_intra, t_inter);
  if (t_bw <= 0) t_bw = 0;

  // Protocols: LL128 keeps 7/9 (one node) or 120/128 of the bandwidth, LL a quarter of it (NCCL: /3.8);
  // per-channel caps bound the chain's 2S. The fabric efficiency already holds what large Simple
  // transfers reach, so NCCL's size-dependent tree correction is applied relative to its large-size value.
  const double chain = 2.0 * bytes;
  if (proto == Protocol::Simple) {
    t_bw = std::max(t_bw, chain / (net.channels * nccl::per_channel_tree_bw(net.arch, k)));
  } else if (proto == Protocol::LL128) {
    const double t_lines = k == 1 ? t_bw / (7.0 / 9.0)
                                  : std::max(t_intra, t_inter / net.inter_ll128_efficiency) / (120.0 / 128.0);
    t_bw = std::max(t_lines,
                    chain / (net.channels * nccl::per_channel_tree_ll128_bw(net.arch, k)));
  } else {
    t_bw = std::max(t_bw * 3.8, chain / nccl::ll_max_bus_bw(net.arch, k, net.amd_cpu));
  }
  t_bw *= nccl::tree_correction_factor(proto, 1e12) / nccl::tree_correction_factor(proto, bytes);

  double intra_lat = nccl::hw_latency(nccl::LinkClass::NVLink, NcclAlgorithm::Tree, proto) * net.intra_latency_scale;
  double inter_lat = nccl::hw_latency(nccl::LinkClass::Net, NcclAlgorithm::Tree, proto) + net.inter_latency_s;
  if (proto == Protocol::Simple) inter_lat += net.inter_latency_s;
  e.latency_s = nccl::base_latency(NcclAlgorithm::Tree, proto) +
                2.0 * ((r - 1) * intra_lat + std::log2(double(k)) * inter_lat) + net.call_overhead_s + net.crossing_latency(k);
  e.time_s = e.latency_s + t_bw;
  const double raw = std::max(t_intra, t_inter), scale = raw > 0 ? t_bw / raw : 0.0;
  e.intra_time_s = t_intra * scale;
  e.inter_time_s = t_inter * scale;
  return e;
}

}  // namespace micsim
