#pragma once
// The cluster as a graph (Boost.Graph): GPUs, the NVSwitch (or NVLink mesh) of each node, the PCIe
// switches that pair GPUs with NICs, the NICs, leaf switches and the spine. Edges carry the link's
// bandwidth per direction. The SimGrid platform (sim/des/platform.cpp) is built from this graph, and
// what-if knobs (a degraded NIC or uplink) are applied to its edges.
#include <boost/graph/adjacency_list.hpp>
#include <string>
#include <vector>

#include "models/hardware/hardware.hpp"

namespace micsim {

enum class VertexKind { Gpu, NvSwitch, PcieSwitch, Nic, Leaf, Spine };
enum class LinkKind { NvLink, Pcie, NicPort, LeafUplink };
const char* to_string(VertexKind k);
const char* to_string(LinkKind k);

struct TopoVertex {
  VertexKind kind = VertexKind::Gpu;
  int node = -1;     // node index (GPU, NVSwitch, PCIe switch, NIC)
  int index = 0;     // local index within its node / leaf index
  std::string name;
};

struct TopoEdge {
  LinkKind kind = LinkKind::NvLink;
  double bytes_per_s = 0;  // per direction, after what-if degradation
  std::string name;
};

using TopologyGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, TopoVertex, TopoEdge>;

struct FabricOptions;  // sim/scenario
struct FabricLayout {
  double oversubscription = 1.0;  // leaf downlink capacity / uplink capacity
  int nodes_per_leaf = 16;
  bool scattered = true;          // cloud placement: node i on leaf i mod leaves (packed: i / nodes_per_leaf)
};

struct Degradation {              // what-if: a slower link
  LinkKind kind = LinkKind::NicPort;
  int node = -1;                  // NIC / NVLink: node; uplink: leaf
  double factor = 1.0;            // bandwidth multiplier in (0, 1]
};

struct ClusterTopology {
  TopologyGraph graph;
  int nodes = 0, gpus_per_node = 0, nic_links = 0, leaves = 0;
  std::vector<int> leaf_of_node;
  // Vertex ids for quick lookup.
  std::vector<std::vector<size_t>> gpu;   // [node][local]
  std::vector<std::vector<size_t>> nic;   // [node][nic link]
  std::vector<size_t> leaf;
  size_t spine = 0;
  int nic_link_of_gpu(int local_gpu) const { return local_gpu * nic_links / gpus_per_node; }
};

// Where nodes sit on the fat tree (the same for the topology graph and the analytic engine's uplink
// sharing, sim/costs/uplink_sharing.hpp).
int leaf_count(const FabricLayout& f, int nodes);
int leaf_of_node(const FabricLayout& f, int nodes, int node);
int nodes_on_leaf(const FabricLayout& f, int nodes, int leaf);
// NIC links of a node (see below).
int nic_links_of(const InstanceSpec& inst);

// NICs are grouped into min(nics, gpus_per_node) NIC links of equal bandwidth (a p5's 32 x 100G EFA
// become 8 links of 400G, one per GPU; a p4d's 4 x 100G serve 2 GPUs each through a PCIe switch;
// a p3dn's single 100G NIC serves all 8 GPUs).
ClusterTopology build_topology(const InstanceSpec& inst, int nodes, const FabricLayout& fabric,
                               const std::vector<Degradation>& degraded = {});

// Bandwidth of one edge kind at one place (after degradation), for reports and tests.
double link_bandwidth(const ClusterTopology& t, LinkKind kind, int node_or_leaf, int index = 0);

// Graphviz dump (`micsim simulate SCENARIO --topology FILE`).
std::string topology_dot(const ClusterTopology& t);

}  // namespace micsim
