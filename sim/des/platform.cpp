#include "sim/des/platform.hpp"

#include <fmt/format.h>
#include <simgrid/s4u.hpp>

namespace sg4 = simgrid::s4u;

namespace micsim::des {

namespace {
using Dir = sg4::LinkInRoute::Direction;

double edge_rate(const ClusterTopology& t, size_t a, size_t b) {
  auto [e, ok] = boost::edge(a, b, t.graph);
  return ok ? t.graph[e].bytes_per_s : 0.0;
}
}  // namespace

sg4::SplitDuplexLink* duplex(sg4::NetZone* zone, const std::string& name, double rate) {
  auto* l = zone->create_split_duplex_link(name, rate);
  l->set_latency(0);
  l->seal();
  return l;
}

double nvlink_rate(const ClusterTopology& t, int node, int gpu) {
  const auto& G = t.graph;
  size_t sw = boost::adjacent_vertices(t.gpu[node][gpu], G).first[0];
  for (auto [ai, ae] = boost::adjacent_vertices(t.gpu[node][gpu], G); ai != ae; ++ai)
    if (G[*ai].kind == VertexKind::NvSwitch) sw = *ai;
  return edge_rate(t, t.gpu[node][gpu], sw);
}

double nic_link_rate(const ClusterTopology& t, int node, int link) {
  const auto& G = t.graph;
  size_t pcie = 0;
  for (auto [ai, ae] = boost::adjacent_vertices(t.nic[node][link], G); ai != ae; ++ai)
    if (G[*ai].kind == VertexKind::PcieSwitch) pcie = *ai;
  return edge_rate(t, t.nic[node][link], pcie);
}

double uplink_rate(const ClusterTopology& t, int leaf) { return edge_rate(t, t.leaf[leaf], t.spine); }

Platform build_platform(const ClusterTopology& t, double compute_speed, double interference) {
  Platform p;
  p.gpu.resize(t.nodes);
  p.compute.resize(t.nodes);
  p.nics.resize(t.nodes);
  auto* core = sg4::create_full_zone("core");
  std::vector<sg4::NetZone*> leaf_zone(t.leaves);
  std::vector<std::vector<int>> nodes_of_leaf(t.leaves);
  for (int n = 0; n < t.nodes; ++n) nodes_of_leaf[t.leaf_of_node[n]].push_back(n);
  std::vector<sg4::NetZone*> node_zone(t.nodes);
  std::vector<simgrid::kernel::routing::NetPoint*> gateway(t.nodes);
  std::vector<sg4::SplitDuplexLink*> uplink(t.leaves);

  for (int l = 0; l < t.leaves; ++l) {
    leaf_zone[l] = sg4::create_full_zone(fmt::format("leaf{}", l));
    leaf_zone[l]->set_parent(core);
    uplink[l] = duplex(core, fmt::format("leaf{}-uplink", l), uplink_rate(t, l));
    for (int n : nodes_of_leaf[l]) {
      auto* z = sg4::create_full_zone(fmt::format("node{}", n));
      z->set_parent(leaf_zone[l]);
      node_zone[n] = z;
      gateway[n] = z->create_router(fmt::format("node{}-gw", n));
      const int g = t.gpus_per_node;
      std::vector<sg4::SplitDuplexLink*> nvlink(g), nic(t.nic_links);
      std::vector<double> nic_rate(t.nic_links, 0.0);
      for (int i = 0; i < g; ++i) {
        p.gpu[n].push_back(z->create_host(fmt::format("node{}-gpu{}", n, i), 1.0));
        nvlink[i] = duplex(z, fmt::format("node{}-gpu{}-nvlink", n, i), nvlink_rate(t, n, i));
      }
      for (int k = 0; k < t.nic_links; ++k) {
        nic_rate[k] = nic_link_rate(t, n, k);
        nic[k] = duplex(z, fmt::format("node{}-nic{}", n, k), nic_rate[k]);
      }
      double nic_sum = 0;
      for (double r : nic_rate) nic_sum += r;
      p.nics[n] = z->create_host(fmt::format("node{}-nics", n), 1.0);
      z->add_route(p.nics[n]->get_netpoint(), gateway[n], nullptr, nullptr,
                   {sg4::LinkInRoute(duplex(z, fmt::format("node{}-nics-all", n), nic_sum), Dir::UP)}, true);
      p.compute[n] = z->create_host(fmt::format("node{}-compute", n),
                                    std::vector<double>{compute_speed, compute_speed * (1.0 - interference)});
      for (int i = 0; i < g; ++i) {
        for (int j = i + 1; j < g; ++j)
          z->add_route(p.gpu[n][i]->get_netpoint(), p.gpu[n][j]->get_netpoint(), nullptr, nullptr,
                       {sg4::LinkInRoute(nvlink[i], Dir::UP), sg4::LinkInRoute(nvlink[j], Dir::DOWN)}, true);
        z->add_route(p.gpu[n][i]->get_netpoint(), gateway[n], nullptr, nullptr,
                     {sg4::LinkInRoute(nic[t.nic_link_of_gpu(i)], Dir::UP)}, true);
      }
      z->seal();
    }
    // Inside a leaf the switch is non-blocking, so it adds no constraint. SimGrid routes need at least
    // one link: each node gets a FATPIPE port into the switch that never limits a flow, used by the
    // flows it sends. One port per sender (not one crossbar per leaf) matters for speed: every flow on a
    // link joins one max-min component, and a leaf-wide crossbar would make each flow's completion
    // re-solve every flow of the leaf (quadratic in the cluster size).
    const auto& members = nodes_of_leaf[l];
    std::vector<sg4::Link*> port(members.size());
    for (size_t a = 0; a < members.size(); ++a) {
      port[a] = leaf_zone[l]->create_link(fmt::format("node{}-leafport", members[a]), 1e15);
      port[a]->set_sharing_policy(sg4::Link::SharingPolicy::FATPIPE);
      port[a]->set_latency(0);
      port[a]->seal();
    }
    for (size_t a = 0; a < members.size(); ++a)
      for (size_t b = 0; b < members.size(); ++b)
        if (a != b)
          leaf_zone[l]->add_route(node_zone[members[a]]->get_netpoint(), node_zone[members[b]]->get_netpoint(),
                                  gateway[members[a]], gateway[members[b]], {sg4::LinkInRoute(port[a])}, false);
    leaf_zone[l]->seal();
  }
  // Between leaves: up through the source leaf's uplink, down through the destination's. The leaf's
  // gateway is its first node's gateway (routes inside a leaf carry no link, so no cost is added).
  for (int a = 0; a < t.leaves; ++a)
    for (int b = a + 1; b < t.leaves; ++b)
      core->add_route(leaf_zone[a]->get_netpoint(), leaf_zone[b]->get_netpoint(), gateway[nodes_of_leaf[a][0]],
                      gateway[nodes_of_leaf[b][0]],
                      {sg4::LinkInRoute(uplink[a], Dir::UP), sg4::LinkInRoute(uplink[b], Dir::DOWN)}, true);
  core->seal();
  return p;
}

}  // namespace micsim::des
