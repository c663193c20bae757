#include "sim/costs/uplink_sharing.hpp"

#include <algorithm>
#include <set>

#include "sim/scenario/scenario.hpp"

namespace micsim {

std::vector<int> group_nodes(GroupKind g, const ParallelLayout& l, int node) {
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
