#include "sim/des/compute_pace.hpp"

#include <boost/pending/disjoint_sets.hpp>

#include <algorithm>
#include <random>

#include "sim/costs/uplink_sharing.hpp"

namespace micsim::des {

std::vector<int> sync_groups(const PreparedSimulation& p, int nodes) {
  boost::disjoint_sets_with_storage<> joined(static_cast<size_t>(nodes));
  for (GroupKind kind : p.sync_kinds) {
    for (int n = 0; n < nodes; ++n) {
      const std::vector<int> group = group_nodes(kind, p.layout, n);  // the group of the node's first rank
      for (int m : group)
        if (m >= 0 && m < nodes) joined.union_set(group.front(), m);
      if (int(group.size()) >= nodes) break;  // every node joined (the world): no other group of this kind adds any
    }
  }
  std::vector<int> id(static_cast<size_t>(nodes), -1), out(static_cast<size_t>(nodes));
  int next = 0;
  for (int n = 0; n < nodes; ++n) {
    int& r = id[size_t(joined.find_set(n))];
    if (r < 0) r = next++;
    out[size_t(n)] = r;
  }
  return out;
}

namespace {

// Normal draws allowed for the middle micro-steps (nodes x GPUs x micro-steps, about 0.2 s): beyond,
// their mean is taken over a sample of them, which spreads the groups' means a little more than the
// step's many micro-steps would (the step waits slightly longer: conservative).
constexpr double kMiddleDrawBudget = double(1 << 24);
constexpr int kMinMiddleSample = 16;

// One micro-step's draws: every node's compute factor, and the pace each sync group meets at.
struct MicroStepPace {
  std::vector<double> node;   // [cluster node]
  std::vector<double> group;  // [sync group]: its slowest node's factor
};

class PaceSampler {
 public:
  PaceSampler(const PreparedSimulation& p, int nodes)
      : nodes_(nodes),
        gpus_(std::max(1, p.layout.gpus_per_node)),
        cv_(effective_jitter_cv(p)),
        jitter_(cv_ > 0 && p.layout.world > 1),
        rng_(p.scenario.what_if.jitter_seed.value_or(0x6d696373696dULL)) {  // default: "micsim"
    group_ = sync_groups(p, nodes_);
    groups_ = group_.empty() ? 0 : 1 + *std::max_element(group_.begin(), group_.end());
    base_.assign(nodes_, 1.0);
    for (const auto& s : p.scenario.what_if.slow_nodes)
      if (s.node < nodes_) base_[s.node] *= s.compute_factor;
    // Stragglers' stalls strike at moments a per-micro-step factor cannot place: their expected
    // stretch on every node, as the analytic engine (models/compute/stragglers.hpp).
    if (const double f = straggler_factor(p); f > 0)
      for (double& b : base_) b *= 1.0 + f;
  }

  int groups() const { return groups_; }
  int group_of(int node) const { return group_[size_t(node)]; }
  int gpus() const { return gpus_; }

  MicroStepPace draw() {
    MicroStepPace m{base_, std::vector<double>(groups(), 0.0)};
    for (int n = 0; n < nodes_; ++n) {
      if (jitter_) {
        double slowest = -1e300;
        for (int g = 0; g < gpus_; ++g) slowest = std::max(slowest, z_(rng_));
        m.node[n] *= std::max(0.5, 1.0 + cv_ * slowest);
      }
      m.group[group_of(n)] = std::max(m.group[group_of(n)], m.node[n]);
    }
    return m;
  }

 private:
  int nodes_, gpus_, groups_ = 1;
  std::vector<int> group_;  // per node: its sync group (sync_groups)
  double cv_;
  bool jitter_;
  std::vector<double> base_;
  std::mt19937_64 rng_;
  std::normal_distribution<double> z_{0.0, 1.0};
};

// The mean over `count` micro-steps (node by node, group by group).
MicroStepPace mean_pace(PaceSampler& s, int count) {
  MicroStepPace sum = s.draw();
  for (int i = 1; i < count; ++i) {
    const MicroStepPace m = s.draw();
    for (size_t n = 0; n < sum.node.size(); ++n) sum.node[n] += m.node[n];
    for (size_t g = 0; g < sum.group.size(); ++g) sum.group[g] += m.group[g];
  }
  for (double& x : sum.node) x /= count;
  for (double& x : sum.group) x /= count;
  return sum;
}

}  // namespace

double ComputePace::at(int node, int micro_step) const {
  const auto& f = factor[size_t(node)];
  return f.empty() ? 1.0 : f[size_t(std::clamp(micro_step, 0, int(f.size()) - 1))];
}

ComputePace sample_compute_pace(const PreparedSimulation& p, int world_nodes, int block_nodes) {
  PaceSampler sampler(p, world_nodes);
  const int built = std::max(1, p.graph.micro_steps), total = std::max(built, p.graph.total_micro_steps);
  // The built micro-steps' paces, and each micro-step's weight in the whole step.
  std::vector<MicroStepPace> paces;
  std::vector<double> weight;
  if (built == total || built < 3) {
    for (int b = 0; b < built; ++b) paces.push_back(sampler.draw()), weight.push_back(1.0);
  } else {
    const int middle = total - 2;
    const double per_micro_step = double(world_nodes) * sampler.gpus();
    const int sample = std::min(middle, std::max(kMinMiddleSample, int(kMiddleDrawBudget / per_micro_step)));
    paces.push_back(sampler.draw()), weight.push_back(1.0);
    const MicroStepPace mean = mean_pace(sampler, sample);
    for (int b = 1; b < built - 1; ++b) paces.push_back(mean), weight.push_back(double(middle) / (built - 2));
    paces.push_back(sampler.draw()), weight.push_back(1.0);
  }
  // The block: the copy holding the sync group whose step adds up slowest (it ends the step where the
  // groups meet), and in it the node whose own micro-steps do.
  std::vector<double> group_sum(size_t(sampler.groups()), 0.0), node_sum(size_t(world_nodes), 0.0);
  for (size_t b = 0; b < paces.size(); ++b) {
    for (size_t g = 0; g < group_sum.size(); ++g) group_sum[g] += weight[b] * paces[b].group[g];
    for (size_t n = 0; n < node_sum.size(); ++n) node_sum[n] += weight[b] * paces[b].node[n];
  }
  const int slowest_group = int(std::max_element(group_sum.begin(), group_sum.end()) - group_sum.begin());
  int slowest_node = -1;
  for (int n = 0; n < world_nodes; ++n)
    if (sampler.group_of(n) == slowest_group && (slowest_node < 0 || node_sum[size_t(n)] > node_sum[size_t(slowest_node)]))
      slowest_node = n;
  ComputePace out;
  out.block_offset = std::max(0, slowest_node) / block_nodes * block_nodes;
  out.factor.assign(size_t(block_nodes), std::vector<double>(paces.size(), 1.0));
  // Each sync group's slowest simulated node meets the group's pace: a shift that is 0 where every
  // member is simulated and every micro-step is its own draw.
  for (size_t b = 0; b < paces.size(); ++b) {
    std::vector<double> simulated_max(size_t(sampler.groups()), -1e300);
    for (int n = 0; n < block_nodes; ++n) {
      const int w = out.block_offset + n;
      simulated_max[size_t(sampler.group_of(w))] = std::max(simulated_max[size_t(sampler.group_of(w))], paces[b].node[size_t(w)]);
    }
    for (int n = 0; n < block_nodes; ++n) {
      const int w = out.block_offset + n, g = sampler.group_of(w);
      out.factor[size_t(n)][b] = paces[b].node[size_t(w)] + (paces[b].group[size_t(g)] - simulated_max[size_t(g)]);
    }
  }
  return out;
}

}  // namespace micsim::des
