#include "models/hardware/topology.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>

namespace micsim {

const char* to_string(VertexKind k) {
  switch (k) {
    case VertexKind::Gpu: return "gpu";
    case VertexKind::NvSwitch: return "nvswitch";
    case VertexKind::PcieSwitch: return "pcie_switch";
    case VertexKind::Nic: return "nic";
    case VertexKind::Leaf: return "leaf";
    case VertexKind::Spine: return "spine";
  }
  return "?";
}

const char* to_string(LinkKind k) {
  switch (k) {
    case LinkKind::NvLink: return "nvlink";
    case LinkKind::Pcie: return "pcie";
    case LinkKind::NicPort: return "nic";
    case LinkKind::LeafUplink: return "leaf_uplink";
  }
  return "?";
}

static double degrade(const std::vector<Degradation>& d, LinkKind kind, int where) {
  double f = 1.0;
  for (const auto& x : d)
    if (x.kind == kind && x.node == where) f *= x.factor;
  return f;
}

int leaf_count(const FabricLayout& f, int nodes) {
  const int per_leaf = std::max(1, f.nodes_per_leaf);
  return std::max(1, (nodes + per_leaf - 1) / per_leaf);
}

int leaf_of_node(const FabricLayout& f, int nodes, int node) {
  return f.scattered ? node % leaf_count(f, nodes) : node / std::max(1, f.nodes_per_leaf);
}

int nodes_on_leaf(const FabricLayout& f, int nodes, int leaf) {
  const int leaves = leaf_count(f, nodes);
  if (leaf < 0 || leaf >= leaves) return 0;
  if (f.scattered) return nodes / leaves + (leaf < nodes % leaves ? 1 : 0);
  const int per_leaf = std::max(1, f.nodes_per_leaf);
  return std::min(per_leaf, nodes - leaf * per_leaf);
}

int nic_links_of(const InstanceSpec& inst) { return std::max(1, std::min(inst.network.nics, inst.gpus_per_node)); }

ClusterTopology build_topology(const InstanceSpec& inst, int nodes, const FabricLayout& fabric,
                               const std::vector<Degradation>& degraded) {
  ClusterTopology t;
  t.nodes = nodes;
  t.gpus_per_node = inst.gpus_per_node;
  t.nic_links = nic_links_of(inst);
  t.leaves = leaf_count(fabric, nodes);
  auto& G = t.graph;
  auto add_vertex = [&](VertexKind k, int node, int index, std::string name) {
    return boost::add_vertex(TopoVertex{k, node, index, std::move(name)}, G);
  };
  auto add_edge = [&](size_t a, size_t b, LinkKind k, double bw, std::string name) {
    boost::add_edge(a, b, TopoEdge{k, bw, std::move(name)}, G);
  };

  t.spine = add_vertex(VertexKind::Spine, -1, 0, "spine");
  const double node_bw = inst.network.node_bytes_per_s();
  for (int l = 0; l < t.leaves; ++l) {
    t.leaf.push_back(add_vertex(VertexKind::Leaf, -1, l, fmt::format("leaf{}", l)));
    // A leaf's uplink carries its nodes' traffic divided by the oversubscription.
    const int on_leaf = nodes_on_leaf(fabric, nodes, l);
    double up = on_leaf * node_bw / std::max(1.0, fabric.oversubscription) * degrade(degraded, LinkKind::LeafUplink, l);
    add_edge(t.leaf.back(), t.spine, LinkKind::LeafUplink, up, fmt::format("leaf{}-uplink", l));
  }
  t.gpu.resize(nodes);
  t.nic.resize(nodes);
  t.leaf_of_node.resize(nodes);
  const double nic_link_bw = node_bw / t.nic_links;
  for (int n = 0; n < nodes; ++n) {
    int l = leaf_of_node(fabric, nodes, n);
    t.leaf_of_node[n] = l;
    size_t sw = add_vertex(VertexKind::NvSwitch, n, 0, fmt::format("node{}-nvswitch", n));
    std::vector<size_t> pcie_of_link;
    for (int p = 0; p < t.nic_links; ++p) {
      size_t pcie = add_vertex(VertexKind::PcieSwitch, n, p, fmt::format("node{}-pcie{}", n, p));
      pcie_of_link.push_back(pcie);
      size_t nic = add_vertex(VertexKind::Nic, n, p, fmt::format("node{}-nic{}", n, p));
      t.nic[n].push_back(nic);
      add_edge(pcie, nic, LinkKind::NicPort, nic_link_bw * degrade(degraded, LinkKind::NicPort, n),
               fmt::format("node{}-nic{}", n, p));
      add_edge(nic, t.leaf[l], LinkKind::Pcie, nic_link_bw * 4, fmt::format("node{}-nic{}-cable", n, p));
    }
    for (int g = 0; g < inst.gpus_per_node; ++g) {
      size_t v = add_vertex(VertexKind::Gpu, n, g, fmt::format("node{}-gpu{}", n, g));
      t.gpu[n].push_back(v);
      add_edge(v, sw, LinkKind::NvLink, inst.intra.bytes_per_s_per_gpu * degrade(degraded, LinkKind::NvLink, n),
               fmt::format("node{}-gpu{}-nvlink", n, g));
      // GPUs reach their NIC through a PCIe switch (Gen4 x16 ~ 25 GB/s per GPU is not the bottleneck
      // next to the NIC share; kept as an edge so the graph says where traffic goes).
      add_edge(v, pcie_of_link[t.nic_link_of_gpu(g)], LinkKind::Pcie, 64e9, fmt::format("node{}-gpu{}-pcie", n, g));
    }
  }
  return t;
}

double link_bandwidth(const ClusterTopology& t, LinkKind kind, int where, int index) {
  const auto& G = t.graph;
  for (auto [ei, ee] = boost::edges(G); ei != ee; ++ei) {
    const auto& e = G[*ei];
    if (e.kind != kind) continue;
    size_t a = boost::source(*ei, G), b = boost::target(*ei, G);
    const TopoVertex& va = G[a];
    const TopoVertex& vb = G[b];
    if (kind == LinkKind::LeafUplink) {
      const TopoVertex& leaf = va.kind == VertexKind::Leaf ? va : vb;
      if (leaf.index == where) return e.bytes_per_s;
    } else if (kind == LinkKind::NicPort) {
      const TopoVertex& nic = va.kind == VertexKind::Nic ? va : vb;
      if (nic.node == where && nic.index == index) return e.bytes_per_s;
    } else if (kind == LinkKind::NvLink) {
      const TopoVertex& gpu = va.kind == VertexKind::Gpu ? va : vb;
      if (gpu.node == where && gpu.index == index) return e.bytes_per_s;
    }
  }
  return 0;
}

std::string topology_dot(const ClusterTopology& t) {
  std::ostringstream o;
  o << "graph cluster {\n";
  const auto& G = t.graph;
  for (auto [vi, ve] = boost::vertices(G); vi != ve; ++vi)
    o << fmt::format("  v{} [label=\"{}\", shape={}];\n", *vi, G[*vi].name,
                     G[*vi].kind == VertexKind::Gpu ? "box" : "ellipse");
  for (auto [ei, ee] = boost::edges(G); ei != ee; ++ei)
    o << fmt::format("  v{} -- v{} [label=\"{} {:.0f} GB/s\"];\n", boost::source(*ei, G), boost::target(*ei, G),
                     to_string(G[*ei].kind), G[*ei].bytes_per_s / 1e9);
  o << "}\n";
  return o.str();
}

}  // namespace micsim
