#include "sim/des/quotient_platform.hpp"

#include <fmt/format.h>
#include <simgrid/s4u.hpp>

#include "sim/des/platform.hpp"

namespace sg4 = simgrid::s4u;

namespace micsim::des {

using Dir = sg4::LinkInRoute::Direction;

QuotientPlatform::QuotientPlatform(const ClusterTopology& t, const NodeSymmetry& s, double compute_speed,
                                   double interference)
    : t_(t), zone_(sg4::create_star_zone("quotient")) {
  const int B = s.period;
  nvlink_.resize(B), nic_.resize(B), nics_all_.resize(B);
  for (int n = 0; n < B; ++n) {
    double nic_sum = 0;
    for (int i = 0; i < t.gpus_per_node; ++i)
      nvlink_[n].push_back(duplex(zone_, fmt::format("node{}-gpu{}-nvlink", n, i), nvlink_rate(t, n, i)));
    for (int k = 0; k < t.nic_links; ++k) {
      nic_[n].push_back(duplex(zone_, fmt::format("node{}-nic{}", n, k), nic_link_rate(t, n, k)));
      nic_sum += nic_link_rate(t, n, k);
    }
    nics_all_[n] = duplex(zone_, fmt::format("node{}-nics-all", n), nic_sum);
    const int leaf = t.leaf_of_node[n];
    if (!uplink_.count(leaf))
      uplink_[leaf] = duplex(zone_, fmt::format("leaf{}-uplink", leaf), uplink_rate(t, leaf) * s.uplink_scale[leaf]);
    compute.push_back(zone_->create_host(fmt::format("node{}-compute", n),
                                         std::vector<double>{compute_speed, compute_speed * (1.0 - interference)}));
  }
}

sg4::Host* QuotientPlatform::end_host(const FlowEnd& e, bool up) {
  sg4::Host*& h = hosts_[{e.node, e.gpu, int(e.tier), e.crossing, up}];
  if (h) return h;
  h = zone_->create_host(fmt::format("node{}-gpu{}-{}{}-{}", e.node, e.gpu, e.tier == Tier::Intra ? "nvlink" : "nic",
                                     e.crossing ? "-uplink" : "", up ? "out" : "in"),
                         1.0);
  sg4::SplitDuplexLink* own = e.tier == Tier::Intra ? nvlink_[e.node][e.gpu]
                              : e.gpu < 0           ? nics_all_[e.node]
                                                    : nic_[e.node][t_.nic_link_of_gpu(e.gpu)];
  const Dir dir = up ? Dir::UP : Dir::DOWN;
  std::vector<sg4::LinkInRoute> links = {sg4::LinkInRoute(own, dir)};
  // Up: the node's link, then the uplink; down: the uplink, then the node's link.
  if (e.crossing) links.insert(up ? links.end() : links.begin(), sg4::LinkInRoute(uplink_.at(t_.leaf_of_node[e.node]), dir));
  if (up)
    zone_->add_route(h->get_netpoint(), nullptr, nullptr, nullptr, links, false);
  else
    zone_->add_route(nullptr, h->get_netpoint(), nullptr, nullptr, links, false);
  return h;
}

void QuotientPlatform::seal() { zone_->seal(); }

}  // namespace micsim::des
