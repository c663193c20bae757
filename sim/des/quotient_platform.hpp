#pragma once
// The platform of a quotient run (sim/des/symmetry.hpp): the block's nodes only, in one SimGrid star
// zone. A flow's route is fixed by its two ends: the sender's end goes up through its node's link
// (an NVLink port, one NIC link, or all NIC links together) and, if the full route leaves the leaf,
// through the leaf's uplink; the receiver's end comes down the same way on the destination's block
// representative. Each end is its own host, so a flow from a node to a copy of itself (the next node
// of a ring that wraps round the block) still has a route. Uplinks run at their rate times the
// symmetry's scale. Links that never limit a flow (the leaf switches' ports) are left out.
#include <map>
#include <tuple>
#include <vector>

#include "models/collective/collective.hpp"
#include "models/hardware/topology.hpp"
#include "sim/des/symmetry.hpp"

namespace simgrid::s4u {
class Host;
class NetZone;
class SplitDuplexLink;
}  // namespace simgrid::s4u

namespace micsim::des {

// One end of a flow: a block node, its GPU (-1: the node's NIC links taken together), the tier, and
// whether the full route crosses the leaf uplinks.
struct FlowEnd {
  int node = 0, gpu = 0;
  Tier tier = Tier::Intra;
  bool crossing = false;
};

class QuotientPlatform {
 public:
  QuotientPlatform(const ClusterTopology& t, const NodeSymmetry& s, double compute_speed, double interference);
  // Hosts for flow ends, made on first use; every one must be asked for before seal().
  simgrid::s4u::Host* sender(const FlowEnd& e) { return end_host(e, true); }
  simgrid::s4u::Host* receiver(const FlowEnd& e) { return end_host(e, false); }
  void seal();
  std::vector<simgrid::s4u::Host*> compute;  // per block node: runs the compute stream

 private:
  simgrid::s4u::Host* end_host(const FlowEnd& e, bool up);
  const ClusterTopology& t_;
  simgrid::s4u::NetZone* zone_;
  std::vector<std::vector<simgrid::s4u::SplitDuplexLink*>> nvlink_, nic_;  // [node][gpu], [node][link]
  std::vector<simgrid::s4u::SplitDuplexLink*> nics_all_;                  // [node]
  std::map<int, simgrid::s4u::SplitDuplexLink*> uplink_;                   // [leaf]
  std::map<std::tuple<int, int, int, bool, bool>, simgrid::s4u::Host*> hosts_;
};

}  // namespace micsim::des
