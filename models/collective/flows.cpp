#include "models/collective/flows.hpp"

#include <algorithm>
#include <set>

namespace micsim {

std::vector<FlowSpec> collective_flows(const CollectiveEstimate& est, const FlowContext& ctx, int node,
                                       const std::vector<int>& ring) {
  std::vector<FlowSpec> out;
  if (est.intra_time_s > 0 && ctx.gpus_per_node > 1)
    out.push_back({Tier::Intra, node, 0, node, 1, est.intra_time_s * ctx.nvlink_bytes_per_s});
  if (est.inter_time_s > 0 && ring.size() > 1) {
    auto it = std::find(ring.begin(), ring.end(), node);
    int next = (it == ring.end() || std::next(it) == ring.end()) ? ring.front() : *std::next(it);
    // The GPUs of this node in the collective(s): concurrent groups x ranks per node, first ones.
    const int used_gpus = std::min(ctx.gpus_per_node, est.layout.ranks_per_node * est.layout.concurrent_groups);
    std::set<int> links;
    for (int g = 0; g < used_gpus; ++g) links.insert(g * ctx.nic_links / ctx.gpus_per_node);
    for (int link : links) {
      int gpu = (link * ctx.gpus_per_node + ctx.nic_links - 1) / ctx.nic_links;  // first GPU on that NIC link
      out.push_back({Tier::Inter, node, gpu, next, gpu, est.inter_time_s * ctx.nic_link_bytes_per_s});
    }
  }
  return out;
}

}  // namespace micsim
