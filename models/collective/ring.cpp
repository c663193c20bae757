// Ring: every rank sends to its successor. all_gather and reduce_scatter take n-1 steps, all_reduce
// 2(n-1) (a reduce-scatter, then an all-gather); each rank sends (n-1)/n·S per pass. Groups are
// node-contiguous, so a ring (per NCCL channel) leaves each node once: per node, the NICs carry the
// same volume a single GPU sends, while the node's other ring edges stay on NVLink/NVSwitch.
#include <algorithm>

#include "models/collective/nccl_constants.hpp"

namespace micsim {

std::optional<CollectiveEstimate> estimate_ring(const NetworkParams& net, CollectiveOp op, double bytes,
                                                const GroupLayout& g, Protocol proto) {
  const int n = g.ranks, k = g.nodes, r = g.ranks_per_node;
  CollectiveEstimate e;
  e.op = op;
  e.bytes = bytes;
  e.layout = g;
  e.algorithm = NcclAlgorithm::Ring;
  e.protocol = proto;
  if (n <= 1) return e;  // nothing to communicate

  const bool all_reduce = op == CollectiveOp::AllReduce;
  const int nsteps = all_reduce ? 2 * (n - 1) : n - 1;
  const double volume = bytes * (op == CollectiveOp::Broadcast || op == CollectiveOp::Reduce
                                     ? 1.0 : busbw_factor(op, n));  // bytes each rank sends

  // Bytes per tier. Inside a node, r-1 of a node's r ring edges are NVLink (all r when k == 1).
  e.intra_bytes_per_gpu = r > 1 ? volume * (k > 1 ? double(r - 1) / r : 1.0) : 0.0;
  e.inter_bytes_per_node = k > 1 ? volume : 0.0;
  // Each ring step moves S/n per rank; Simple and LL128 reach full rate only with large steps (the
  // ramps: NVLink's measured on one-node rings, the network's on multi-node rows with NCCL's latency
  // beside it). Protocols: LL spends half of every line on flags and is capped (llMaxBws); LL128 keeps
  // 120/128.
  const bool ramped = proto != Protocol::LL;
  const double step = bytes / double(n);
  const double t_intra_line = e.intra_bytes_per_gpu / (net.intra_bytes_per_s * net.intra_efficiency);  // no ramp
  const double t_intra = t_intra_line / (ramped ? net.intra_ramp(step) : 1.0);
  const double t_inter = k > 1 ? e.inter_bytes_per_node / (net.inter_bandwidth_for(g) * (ramped ? net.inter_ramp(step) : 1.0)) : 0.0;
  auto with_protocol = [&](double intra, double inter) {
    if (proto == Protocol::LL) return std::max(std::max(intra, inter) / nccl::kLLEfficiency, volume / nccl::ll_max_bus_bw(net.arch, k, net.amd_cpu));
    if (proto == Protocol::LL128)
      return std::max(std::max(intra, inter / net.inter_ll128_efficiency) / nccl::kLL128Efficiency,
                      volume / (net.channels * nccl::per_channel_ring_ll128_bw(net.arch)));
    return std::max(intra, inter);
  };
  const double t_bw = with_protocol(t_intra, t_inter);
  const double t_no_intra_ramp = with_protocol(t_intra_line, t_inter);
  e.bottleneck = t_inter > t_intra ? Tier::Inter : Tier::Intra;

  // Latency (NCCL tuning.cc, ring): base + intra steps x NVLink latency + inter steps x network latency.
  double intra_lat = nccl::hw_latency(nccl::LinkClass::NVLink, NcclAlgorithm::Ring, proto) * net.intra_latency_scale;
  // With one rank per node every ring step crosses the network and nothing hides its latency, so NCCL
  // (tuning.cc since v2.23: "With ppn=1 latencies are fully exposed, use the Tree network latency")
  // charges the tree's network hop there: LL 5.0 instead of 2.7 us, LL128 8.5 instead of 4.0.
  const NcclAlgorithm net_hop = r == 1 ? NcclAlgorithm::Tree : NcclAlgorithm::Ring;
  double inter_lat = nccl::hw_latency(nccl::LinkClass::Net, net_hop, proto) + net.inter_latency_s;
  if (proto == Protocol::Simple) inter_lat += net.inter_latency_s;  // flush
  int inter_steps = 0;
  if (k > 1) {
    intra_lat = std::max(intra_lat, (proto == Protocol::Simple ? 3.0 : 1.0) * 1e-6);  // NCCL_NET_OVERHEAD
    // all_reduce: 2k network steps, NCCL <= 2.21's count. NCCL 2.23+ counts 2(k-1); held out, the 2019 p3dn
    // rows (the only ones that tell the two apart) go from 1.5 to 39 % with it (docs/model.md sec 4.3).
    inter_steps = std::min(nsteps, all_reduce ? 2 * k : k - 1);
  }
  double lat = nccl::base_latency(NcclAlgorithm::Ring, proto) + (nsteps - inter_steps) * intra_lat +
               inter_steps * inter_lat;
  if (all_reduce && proto == Protocol::Simple && k > 1 && bytes / (net.channels * n) >= 64)
    lat *= nccl::ring_plateau_factor(net.arch);
  e.latency_s = lat + net.call_overhead_s + net.crossing_latency(k);
  // The NVLink ramp and the latency sum are both a fixed cost per ring step. On one node, where the
  // ramp is measured, NCCL's sum is a few microseconds and the ramp's shortfall is all of it; across
  // nodes every step also waits for the hops NCCL's latency charges, so a step pays the larger of the
  // two, not both: the NVLink ramp's shortfall counts only where it exceeds the latency sum. (The
  // network ramp stays additive: it is fitted on multi-node rows with the latency already beside it.)
  const double t_transfer = k > 1 ? t_no_intra_ramp + std::max(0.0, (t_bw - t_no_intra_ramp) - lat) : t_bw;
  e.time_s = e.latency_s + t_transfer;
  const double raw = std::max(t_intra, t_inter), scale = raw > 0 ? t_transfer / raw : 0.0;
  e.intra_time_s = t_intra * scale;
  e.inter_time_s = t_inter * scale;
  return e;
}

}  // namespace micsim
