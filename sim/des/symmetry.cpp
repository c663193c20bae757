#include "sim/des/symmetry.hpp"

#include <algorithm>
#include <set>

#include "sim/costs/uplink_sharing.hpp"
#include "sim/des/platform.hpp"

namespace micsim::des {

namespace {

// One group kind's rings, as the engine uses them: each node's ring successor and ring size.
struct Rings {
  GroupKind kind;
  std::vector<int> next, size;
};

Rings rings_of(GroupKind g, const ParallelLayout& l, int nodes) {
  Rings r{g, std::vector<int>(nodes), std::vector<int>(nodes)};
  for (int n = 0; n < nodes; ++n) {
    const std::vector<int> ring = group_nodes(g, l, n);
    auto it = std::find(ring.begin(), ring.end(), n);
    r.next[n] = (it == ring.end() || std::next(it) == ring.end()) ? ring.front() : *std::next(it);
    r.size[n] = int(ring.size()) + (it == ring.end() ? 1 << 20 : 0);  // a node outside its own ring never matches
  }
  return r;
}

// The shift by B maps every ring onto a ring (successors shift with it), and every group meeting the
// block [0, B) is closed under "mod B" (each member's block copy m mod B is a member too; then its
// members mod B are exactly its members inside the block). Linear in the nodes per distinct group.
bool rings_invariant(const Rings& r, const ParallelLayout& l, int nodes, int B) {
  for (int n = 0; n < nodes; ++n) {
    const int m = (n + B) % nodes;
    if (r.size[m] != r.size[n] || r.next[m] != (r.next[n] + B) % nodes) return false;
  }
  std::vector<char> member(nodes, 0), checked(nodes, 0);
  for (int n = 0; n < B; ++n) {
    const std::vector<int> group = group_nodes(r.kind, l, n);
    if (checked[group.front()]) continue;  // the same group as an earlier block node's
    checked[group.front()] = 1;
    for (int m : group) member[m] = 1;
    bool closed = true;
    for (int m : group) closed = closed && member[m % B];
    for (int m : group) member[m] = 0;
    if (!closed) return false;
  }
  return true;
}

// Leaves move as a whole under the shift (leaf of n + B depends only on the leaf of n), keep their
// uplink rate, and the leaves the block touches lie in different orbits. Fills the uplink scales.
bool leaves_invariant(const ClusterTopology& t, int B, std::vector<double>& scale) {
  const int N = t.nodes, L = t.leaves;
  std::vector<int> sigma(L, -1);
  for (int n = 0; n < N; ++n) {
    int& s = sigma[t.leaf_of_node[n]];
    const int to = t.leaf_of_node[(n + B) % N];
    if (s >= 0 && s != to) return false;
    s = to;
  }
  for (int l = 0; l < L; ++l)
    if (sigma[l] < 0 || uplink_rate(t, sigma[l]) != uplink_rate(t, l)) return false;
  std::vector<int> orbit_of(L, -1), orbit_size;
  for (int l = 0; l < L; ++l) {
    if (orbit_of[l] >= 0) continue;
    int k = 0;
    for (int x = l; orbit_of[x] < 0; x = sigma[x]) orbit_of[x] = int(orbit_size.size()), ++k;
    orbit_size.push_back(k);
  }
  scale.assign(L, 0.0);
  std::set<int> touched_orbits;
  for (int n = 0; n < B; ++n) {
    const int l = t.leaf_of_node[n];
    if (scale[l] > 0) continue;
    if (!touched_orbits.insert(orbit_of[l]).second) return false;
    scale[l] = double(orbit_size[orbit_of[l]]) * B / N;
  }
  return true;
}

}  // namespace

NodeSymmetry find_node_symmetry(const PreparedSimulation& p, const ClusterTopology& topo) {
  const int N = topo.nodes;
  NodeSymmetry none{N, N, {}};
  if (N < 2 || p.layout.nodes != N || !p.scenario.what_if.degraded.empty()) return none;
  std::set<GroupKind> kinds;
  for (const CommOp& op : p.graph.comm_ops) kinds.insert(op.group);
  std::vector<Rings> rings;
  for (GroupKind g : kinds) rings.push_back(rings_of(g, p.layout, N));
  for (int B = 1; B <= N / 2; ++B) {
    if (N % B != 0) continue;
    NodeSymmetry s{B, N, {}};
    if (!leaves_invariant(topo, B, s.uplink_scale)) continue;  // linear: first
    bool ok = true;
    for (const Rings& r : rings) ok = ok && rings_invariant(r, p.layout, N, B);
    if (!ok) continue;
    // Uneven compute (sampled jitter, a slow node) makes copies of the block drift apart; copies that
    // share an oversubscribed uplink then contend less than copies in step would (a 4:1 fabric with
    // scattered placement: 1.6 % faster than the block says). There every node runs; elsewhere the
    // drift moves the step by < 0.5 %.
    const bool uneven = (p.compute_calibration.jitter_cv > 0 && p.layout.world > 1) || !p.scenario.what_if.slow_nodes.empty();
    const bool shared_uplink = std::any_of(s.uplink_scale.begin(), s.uplink_scale.end(), [](double x) { return x > 0 && x < 1; });
    if (uneven && shared_uplink && p.scenario.cluster.fabric.oversubscription > 1) return none;
    return s;
  }
  return none;
}

}  // namespace micsim::des
