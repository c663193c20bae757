#pragma once
// Turns the cluster topology (models/hardware/topology) into a SimGrid platform with the C++ API:
// one zone per node (its GPUs, a compute host, a gateway; NVLink and NIC links as split-duplex links),
// node zones inside leaf zones, leaf zones inside the core zone; leaf uplinks carry the
// oversubscription. Only sim/des sees SimGrid.
#include <string>
#include <vector>

#include "models/hardware/topology.hpp"

namespace simgrid::s4u {
class Host;
class NetZone;
class SplitDuplexLink;
}

namespace micsim::des {

struct Platform {
  std::vector<std::vector<simgrid::s4u::Host*>> gpu;  // [node][local gpu]
  std::vector<simgrid::s4u::Host*> compute;           // one per node: runs the compute stream
  // One per node: the endpoint of its NICs taken together (a link of their summed rate to the
  // node's gateway), for flows that use every NIC link of the node alike (see des_engine.cpp).
  std::vector<simgrid::s4u::Host*> nics;
};

// Configures the network model for exact alpha-beta behaviour and builds the zones.
// `compute_speed` is the compute hosts' nominal speed; `interference` the fraction of it lost while
// a collective runs on the node (second pstate).
Platform build_platform(const ClusterTopology& t, double compute_speed, double interference);

// The rates (bytes/s) the platform gives the topology's edges: a GPU's NVLink port, one NIC link of a
// node, a leaf's uplink to the spine.
double nvlink_rate(const ClusterTopology& t, int node, int gpu);
double nic_link_rate(const ClusterTopology& t, int node, int link);
double uplink_rate(const ClusterTopology& t, int leaf);

// A split-duplex link of `rate` bytes/s, no latency (collective latencies are waited by formula).
simgrid::s4u::SplitDuplexLink* duplex(simgrid::s4u::NetZone* zone, const std::string& name, double rate);

}  // namespace micsim::des
