#include "sim/costs/uplink_sharing.hpp"

#include <algorithm>
#include <set>

#include "sim/scenario/scenario.hpp"

namespace micsim {

// With model parallelism: the ranks of the group of kind g holding the node's first GPU, by Megatron's
// rank order (r = tp_i + tp·(j + J·pp_i), j = cp_i + cp·dp_i over the J = cp·dp ranks that hold the
// same parameters), mapped to their nodes. Pipeline neighbours pair stages (0,1), (2,3), ...: every
// node runs the same step, so each stage exchanges with one peer.
static std::vector<int> model_parallel_group_nodes(GroupKind g, const ParallelLayout& l, int node) {
  const int tp = l.mp.tp, cp = l.mp.cp, J = l.dp, pp = l.mp.pp, gpn = l.gpus_per_node;
  const int r = node * gpn;
  const int tp_i = r % tp, j_i = r / tp % J, pp_i = r / (tp * J);
  auto rank = [&](int t, int j, int s) { return t + tp * (j + J * s); };
  std::vector<int> ranks;
  switch (g) {
    case GroupKind::Tensor: for (int t = 0; t < tp; ++t) ranks.push_back(rank(t, j_i, pp_i)); break;
    case GroupKind::Context:
      for (int c = 0; c < cp; ++c) ranks.push_back(rank(tp_i, j_i / cp * cp + c, pp_i));
      break;
    case GroupKind::World: for (int j = 0; j < J; ++j) ranks.push_back(rank(tp_i, j, pp_i)); break;
    case GroupKind::Partition:
    case GroupKind::InterNode: {
      const int p = l.partition_size, first = j_i / p * p;
      for (int j = first; j < first + p; ++j) ranks.push_back(rank(tp_i, j, pp_i));
      break;
    }
    case GroupKind::Replication:
      for (int j = j_i % l.partition_size; j < J; j += l.partition_size) ranks.push_back(rank(tp_i, j, pp_i));
      break;
    case GroupKind::IntraNode: ranks.push_back(r); break;
    case GroupKind::PipelinePeer: {
      const int first = pp_i / 2 * 2;
      for (int s = first; s < std::min(pp, first + 2); ++s) ranks.push_back(rank(tp_i, j_i, s));
      break;
    }
  }
  std::vector<int> out;
  for (int x : ranks)
    if (out.empty() || out.back() != x / gpn) out.push_back(x / gpn);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<int> group_nodes(GroupKind g, const ParallelLayout& l, int node) {
  if (!l.mp.none()) return model_parallel_group_nodes(g, l, node);
  std::vector<int> out;
  const int k = l.partition_group_nodes();
  switch (g) {
    case GroupKind::World:
      for (int n = 0; n < l.nodes; ++n) out.push_back(n);
      break;
    case GroupKind::Partition:
    case GroupKind::InterNode:
      for (int n = node / k * k; n < node / k * k + k; ++n) out.push_back(n);
      break;
    case GroupKind::Replication:
      if (l.partition_size >= l.gpus_per_node) {
        for (int n = node % k; n < l.nodes; n += k) out.push_back(n);
      } else {
        for (int n = 0; n < l.nodes; ++n) out.push_back(n);
      }
      break;
    case GroupKind::IntraNode:
    case GroupKind::Tensor:  // model-parallel groups exist only with model parallelism (above)
    case GroupKind::Context:
    case GroupKind::PipelinePeer:
      out.push_back(node);
      break;
  }
  return out;
}

FabricLayout fabric_layout(const ClusterSpec& c) {
  FabricLayout f;
  f.oversubscription = c.fabric.oversubscription;
  f.nodes_per_leaf = c.fabric.nodes_per_leaf;
  f.scattered = c.fabric.scattered;
  return f;
}

double uplink_slowdown(GroupKind g, const ParallelLayout& l, const FabricLayout& fabric, int nic_links,
                       const CollectiveEstimate& est) {
  const int leaves = leaf_count(fabric, l.nodes);
  if (est.inter_time_s <= 0 || leaves <= 1) return 1.0;
  // NIC links of a node that carry this collective (as flows.cpp opens them).
  const int gpn = std::max(1, l.gpus_per_node);
  const int used_gpus = std::min(gpn, est.layout.ranks_per_node * est.layout.concurrent_groups);
  std::set<int> links;
  for (int gpu = 0; gpu < used_gpus; ++gpu) links.insert(gpu * nic_links / gpn);
  const double flows_per_node = double(links.size());

  std::vector<double> up(leaves, 0.0), down(leaves, 0.0);
  for (int n = 0; n < l.nodes; ++n) {
    const std::vector<int> ring = group_nodes(g, l, n);
    if (ring.size() < 2) continue;
    auto it = std::find(ring.begin(), ring.end(), n);
    const int next = (it == ring.end() || std::next(it) == ring.end()) ? ring.front() : *std::next(it);
    const int from = leaf_of_node(fabric, l.nodes, n), to = leaf_of_node(fabric, l.nodes, next);
    if (from == to) continue;
    up[from] += flows_per_node;
    down[to] += flows_per_node;
  }
  // Capacities in NIC-link units: an uplink carries (nodes on the leaf x node bandwidth) / oversubscription.
  double worst = 1.0;
  for (int leaf = 0; leaf < leaves; ++leaf) {
    const double capacity = nodes_on_leaf(fabric, l.nodes, leaf) * nic_links / std::max(1.0, fabric.oversubscription);
    if (capacity <= 0) continue;
    worst = std::max({worst, up[leaf] / capacity, down[leaf] / capacity});
  }
  return worst;
}

}  // namespace micsim
