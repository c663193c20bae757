// Picks what NCCL would run: every allowed (algorithm, protocol) pair is costed and the fastest wins
// (NCCL enqueue.cc topoGetAlgoInfo). NCCL_ALGO / NCCL_PROTO-like overrides restrict the set.
#include <algorithm>
#include <cctype>
#include <sstream>
#include <stdexcept>

#include "models/collective/collective.hpp"
#include "models/collective/nccl_constants.hpp"

#include <fmt/format.h>

namespace micsim {

const char* to_string(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::AllGather: return "all_gather";
    case CollectiveOp::ReduceScatter: return "reduce_scatter";
    case CollectiveOp::AllReduce: return "all_reduce";
    case CollectiveOp::Broadcast: return "broadcast";
    case CollectiveOp::Reduce: return "reduce";
  }
  return "?";
}

std::optional<CollectiveOp> parse_collective_op(const std::string& s) {
  for (auto op : {CollectiveOp::AllGather, CollectiveOp::ReduceScatter, CollectiveOp::AllReduce,
                  CollectiveOp::Broadcast, CollectiveOp::Reduce})
    if (s == to_string(op)) return op;
  return std::nullopt;
}

const char* to_string(Protocol p) {
  switch (p) {
    case Protocol::LL: return "LL";
    case Protocol::LL128: return "LL128";
    case Protocol::Simple: return "Simple";
  }
  return "?";
}

std::optional<std::vector<Protocol>> parse_nccl_proto(const std::string& value) {
  const std::vector<Protocol> all = {Protocol::LL, Protocol::LL128, Protocol::Simple};
  const bool exclude = !value.empty() && value.front() == '^';  // NCCL's "^LL128": all but these
  std::vector<Protocol> named;
  std::istringstream items(exclude ? value.substr(1) : value);
  for (std::string item; std::getline(items, item, ',');) {
    item.erase(std::remove(item.begin(), item.end(), ' '), item.end());
    if (item.empty()) continue;
    auto same = [&](Protocol p) {
      const std::string n = to_string(p);
      return n.size() == item.size() && std::equal(n.begin(), n.end(), item.begin(), [](char a, char b) {
               return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
             });
    };
    auto p = std::find_if(all.begin(), all.end(), same);
    if (p == all.end()) return std::nullopt;
    named.push_back(*p);
  }
  if (!exclude) return named;
  std::vector<Protocol> kept;
  for (auto p : all)
    if (std::find(named.begin(), named.end(), p) == named.end()) kept.push_back(p);
  if (kept.empty()) return std::nullopt;  // excludes every protocol: nothing could run
  return kept;
}

std::optional<Protocol> parse_protocol(const std::string& s) {
  for (auto p : {Protocol::LL, Protocol::LL128, Protocol::Simple})
    if (s == to_string(p)) return p;
  return std::nullopt;
}

const char* to_string(Tier t) { return t == Tier::Intra ? "intra-node" : "inter-node"; }

GroupLayout GroupLayout::make(int ranks, int nodes, int concurrent_groups) {
  if (ranks < 1 || nodes < 1 || ranks % nodes != 0 || concurrent_groups < 1)
    throw std::invalid_argument("GroupLayout: ranks must be a positive multiple of nodes");
  return GroupLayout{ranks, nodes, ranks / nodes, concurrent_groups};
}

double busbw_factor(CollectiveOp op, int n) {
  if (n <= 1) return op == CollectiveOp::Broadcast || op == CollectiveOp::Reduce ? 1.0 : 0.0;
  switch (op) {
    case CollectiveOp::AllReduce: return 2.0 * (n - 1) / n;
    case CollectiveOp::AllGather:
    case CollectiveOp::ReduceScatter: return double(n - 1) / n;
    default: return 1.0;
  }
}

double CollectiveEstimate::busbw() const { return algbw() * busbw_factor(op, layout.ranks); }

NetworkParams NetworkParams::from_instance(const InstanceSpec& inst) {
  NetworkParams p;
  p.arch = inst.gpu.arch;
  p.intra_bytes_per_s = inst.intra.bytes_per_s_per_gpu;
  p.nvls = inst.intra.nvls;
  p.inter_node_bytes_per_s = inst.network.node_bytes_per_s();
  p.inter_efficiency = inst.network.fabric.bandwidth_efficiency;
  p.inter_efficiency_at_scale = inst.network.fabric.bandwidth_efficiency_at_scale;
  p.inter_latency_s = inst.network.fabric.latency_s;
  p.inter_fixed_latency_s = inst.network.fabric.fixed_latency_s;
  p.inter_ll128_efficiency = inst.network.fabric.ll128_efficiency;
  p.inter_tree_efficiency = inst.network.fabric.tree_efficiency_at_scale;
  p.gpu_path_bytes_per_s = inst.network.fabric.gpu_path_bytes_per_s;
  p.inter_algorithms = inst.network.fabric.algorithms;
  // LL128 needs ordered 128-byte stores end to end, which some fabrics do not give (catalog `ll128`).
  if (!inst.network.fabric.ll128) p.inter_protocols = {Protocol::LL, Protocol::Simple};
  p.channels = inst.gpu.arch == GpuArch::Volta ? 12 : 16;
  p.gpus_per_node = inst.gpus_per_node;
  p.nics = inst.network.nics;
  p.call_overhead_s = inst.intra.call_overhead_s;
  p.nccl_net_latency_s = inst.network.fabric.nccl_net_latency_s;
  p.choose_fastest = inst.choose_fastest;
  p.amd_cpu = inst.cpu == "amd";
  p.collnet = inst.network.collnet;
  p.collnet_efficiency = inst.network.fabric.collnet_efficiency >= 0 ? inst.network.fabric.collnet_efficiency
                                                                      : inst.network.fabric.bandwidth_efficiency;
  p.intra_ramp_min = inst.intra.ramp_min;
  p.intra_ramp_half_bytes = inst.intra.ramp_half_bytes;
  p.inter_ramp_min = inst.network.fabric.ramp_min;
  p.inter_ramp_half_bytes = inst.network.fabric.ramp_half_bytes;
  if (!inst.nccl_tuner.empty()) p.tuner = find_nccl_tuner(inst.nccl_tuner);
  if (auto protos = parse_nccl_proto(inst.nccl_proto)) p.protocols = *protos;  // validated at catalog load
  p.source = "catalog defaults for " + inst.name + " (fabric " + inst.network.fabric.name +
             (p.tuner ? ", tuner " + p.tuner->name : std::string()) +
             // What NCCL's own pick is made with (docs/model.md sec 4.6).
             (p.nccl_net_latency_s > 0 ? fmt::format(", net plugin reports {:g} us to NCCL", p.nccl_net_latency_s * 1e6) : std::string()) +
             (p.amd_cpu ? ", AMD hosts" : "") + (p.collnet ? ", CollNet (SHARP)" : "") + (p.choose_fastest ? ", fastest pick (what-if)" : "") +
             (inst.nccl_proto.empty() ? std::string() : ", NCCL_PROTO " + inst.nccl_proto) + ")";
  return p;
}

NetworkParams NetworkParams::as_nccl_models_it() const {
  NetworkParams v = *this;
  // NCCL rates a ring at nChannels x the links' nominal speed (tuning.cc: busBw = nChannels * bw) and
  // adds only its own tables' latencies, plus the net plugin's reported one as latencyInter.
  v.intra_efficiency = 1.0;
  v.intra_latency_scale = 1.0;
  v.intra_ramp_min = 1.0;
  v.inter_efficiency = v.inter_efficiency_at_scale = 1.0;
  v.inter_ramp_min = 1.0;
  v.inter_latency_s = nccl_net_latency_s;
  v.inter_fixed_latency_s = 0;
  v.inter_ll128_efficiency = v.inter_tree_efficiency = 1.0;
  v.call_overhead_s = 0;
  v.gpu_path_bytes_per_s = 0;  // a measured rate of the host-staged path, not in NCCL's tables
  if (nvls) v.nvls_efficiency = nccl::nvls_efficiency(arch);  // NCCL's own, not the fitted one
  v.collnet_efficiency = 1.0;
  if (arch >= GpuArch::Hopper) v.collnet_direct_rating = 0.85;  // tuning.cc: "if (minCompCap >= 90) busBw *= .85"
  return v;
}

double NetworkParams::inter_efficiency_for(int nodes) const {
  if (nodes <= 2) return inter_efficiency;
  return inter_efficiency_at_scale + (inter_efficiency - inter_efficiency_at_scale) * 2.0 / nodes;
}

double NetworkParams::nic_bandwidth_for(const GroupLayout& g, double efficiency) const {
  const double node = inter_node_bytes_per_s * efficiency;
  double per_gpu = node / std::max(1, std::min(nics, gpus_per_node));
  if (gpu_path_bytes_per_s > 0) per_gpu = std::min(per_gpu, gpu_path_bytes_per_s);
  return std::min(node / g.concurrent_groups, g.ranks_per_node * per_gpu);
}

double NetworkParams::ramp_efficiency(double step_bytes, double e_min, double half_bytes) {
  if (e_min >= 1.0 || half_bytes <= 0) return 1.0;
  return e_min + (1.0 - e_min) * step_bytes / (step_bytes + half_bytes);
}

template <class T>
static bool allowed(const std::vector<T>& list, T v) {
  return list.empty() || std::find(list.begin(), list.end(), v) != list.end();
}

std::vector<CollectiveEstimate> CollectiveModel::candidates(CollectiveOp op, double bytes, const GroupLayout& g) const {
  std::vector<CollectiveEstimate> out;
  for (auto proto : {Protocol::LL, Protocol::LL128, Protocol::Simple}) {
    if (g.nodes > 1 && !allowed(net_.inter_protocols, proto)) continue;
    if (!allowed(net_.protocols, proto)) continue;  // NCCL_PROTO, as the instance's plugin sets it
    for (auto est : {estimate_ring(net_, op, bytes, g, proto), estimate_tree(net_, op, bytes, g, proto),
                     estimate_nvls(net_, op, bytes, g, proto),
                     estimate_collnet(net_, op, bytes, g, proto, NcclAlgorithm::CollNetDirect),
                     estimate_collnet(net_, op, bytes, g, proto, NcclAlgorithm::CollNetChain),
                     estimate_collnet(net_, op, bytes, g, proto, NcclAlgorithm::NVLS)}) {
      if (!est) continue;
      if (g.nodes > 1 && !allowed(net_.inter_algorithms, est->algorithm == NcclAlgorithm::NVLSTree
                                                             ? NcclAlgorithm::Tree : est->algorithm))
        continue;
      out.push_back(*est);
    }
  }
  return out;
}

// The tuner plugin's pick for this collective, when a region holds it and its algorithm can run here
// (the plugin skips what NCCL marks invalid, e.g. NVLS-Tree without NVLS, and tries the next region).
std::optional<CollectiveEstimate> CollectiveModel::tuner_choice(CollectiveOp op, double bytes, const GroupLayout& g) const {
  if (!net_.tuner) return std::nullopt;
  for (const TunerRegion* r : net_.tuner->matches(op, bytes, g.ranks, g.nodes)) {
    if (!allowed(net_.protocols, r->protocol)) continue;  // NCCL_PROTO disables it in the cost table the plugin fills
    std::optional<CollectiveEstimate> e;
    switch (r->algorithm) {
      case NcclAlgorithm::Ring: e = estimate_ring(net_, op, bytes, g, r->protocol); break;
      case NcclAlgorithm::Tree: e = estimate_tree(net_, op, bytes, g, r->protocol); break;
      case NcclAlgorithm::NVLS:
        e = g.nodes > 1 ? estimate_collnet(net_, op, bytes, g, r->protocol, r->algorithm)
                        : estimate_nvls(net_, op, bytes, g, r->protocol);
        break;
      case NcclAlgorithm::NVLSTree: e = estimate_nvls(net_, op, bytes, g, r->protocol); break;
      case NcclAlgorithm::CollNetDirect:
      case NcclAlgorithm::CollNetChain: e = estimate_collnet(net_, op, bytes, g, r->protocol, r->algorithm); break;
    }
    if (e && e->algorithm == r->algorithm) {
      e->tuner = net_.tuner;
      return e;
    }
  }
  return std::nullopt;
}

CollectiveEstimate CollectiveModel::estimate(CollectiveOp op, double bytes, const GroupLayout& g,
                                             const CollectiveChoice& choice) const {
  if (!choice.algorithm && !choice.protocol)
    if (auto t = tuner_choice(op, bytes, g)) return *t;
  // NCCL picks by its own model, which knows none of the fabric's measured costs; what it picked then runs
  // at those costs. (Picking by the calibrated cost instead would let a measured slow protocol be dodged,
  // which NCCL does not do: it keeps running LL128 where its tables rate LL128 fastest.)
  auto allowed_by_choice = [&](const CollectiveEstimate& c) {
    return (!choice.algorithm || c.algorithm == *choice.algorithm) && (!choice.protocol || c.protocol == *choice.protocol);
  };
  const std::vector<CollectiveEstimate> costed = candidates(op, bytes, g);
  const std::vector<CollectiveEstimate> rated = net_.choose_fastest ? costed
                                                : CollectiveModel(net_.as_nccl_models_it()).candidates(op, bytes, g);
  std::optional<CollectiveEstimate> pick;
  for (const auto& c : rated)
    if (allowed_by_choice(c) && (!pick || c.time_s < pick->time_s)) pick = c;
  if (pick)
    for (const auto& c : costed)
      if (c.algorithm == pick->algorithm && c.protocol == pick->protocol) return c;
  // The override named something that cannot run this collective: fall back to ring, as NCCL does
  // when NCCL_ALGO excludes every valid algorithm for an operation.
  return *estimate_ring(net_, op, bytes, g, choice.protocol.value_or(Protocol::Simple));
}

}  // namespace micsim
