// Builds the task graph of one step. The rules, per strategy, in the order a framework issues work:
//
//  * Parameter gathers (ZeRO-3, MiCS, HSDP): every use of a unit (forward, then backward in reverse)
//    needs its parameters whole. Gathers run on the gather stream ahead of use; the gather for use i
//    waits until the compute of use i-d-1 is done (its buffer is then free), d = prefetch depth.
//    DeepSpeed keeps units whose reuse distance is within max_live_parameters across the
//    forward->backward turn, so those are not gathered again.
//    MiCS with a partition group spanning nodes gathers hierarchically: inter-node, copy, intra-node.
//  * Gradients are reduced per bucket on the reduce stream, after the backward that fills the bucket:
//    ZeRO-2/3 reduce-scatter over all GPUs every micro-step; MiCS/HSDP reduce-scatter in the partition
//    group every micro-step and all-reduce the shard across the replication group at the last
//    micro-step (2-hop) or at every micro-step (FSDP1 HSDP); DDP and ZeRO-1 reduce only at the last
//    micro-step (no_sync before it).
//  * The optimizer step updates the local shard after every gradient reduction; ZeRO-1/2 then
//    all-gather the updated parameters.
#include "sim/schedule/schedule.hpp"

#include <algorithm>
#include <cmath>

namespace micsim {

GroupLayout group_layout(GroupKind g, const ParallelLayout& l) {
  switch (g) {
    case GroupKind::World: return l.world_group();
    case GroupKind::Partition: return l.partition_group();
    case GroupKind::Replication: return l.replication_group();
    case GroupKind::InterNode: {
      int k = l.partition_group_nodes();
      return GroupLayout::make(k, k, l.gpus_per_node);
    }
    case GroupKind::IntraNode: return GroupLayout::make(l.gpus_per_node, 1, 1);
  }
  return l.world_group();
}

namespace {

class Builder {
 public:
  explicit Builder(const ScheduleInputs& in) : in_(in), w_(*in.workload) {
    g_.total_micro_steps = in.micro_steps;
    g_.micro_steps = (in.max_built_micro_steps > 0 && in.micro_steps > std::max(4, in.max_built_micro_steps))
                         ? std::max(4, in.max_built_micro_steps)
                         : in.micro_steps;
    g_.units = static_cast<int>(w_.units.size());
    pe_ = bytes_per_element(w_.options.precision);
  }

  TaskGraph build() {
    const StrategyKind kind = in_.strategy.kind;
    const bool gathers = in_.sharding.gathers_parameters;
    const int U = g_.units;
    // Units kept gathered across the forward->backward turn (DeepSpeed reuse distance; not FSDP).
    int keep = 0;
    if (gathers && kind != StrategyKind::HSDP) {
      double budget = in_.strategy.max_live_parameters;
      for (int u = U - 1; u >= 0 && budget >= double(w_.units[u].gather_params); --u) {
        budget -= double(w_.units[u].gather_params);
        ++keep;
      }
    }
    const int depth = gathers ? in_.sharding.prefetch_units : 0;

    std::vector<uint32_t> last_reduce;  // reduce-stream tasks the optimizer waits for
    for (int m = 0; m < g_.micro_steps; ++m) {
      const bool last = m == g_.micro_steps - 1;
      // The sequence of unit uses in this micro-step: forward 0..U-1, backward U-1..0.
      struct Use { int unit; bool backward; };
      std::vector<Use> uses;
      for (int u = 0; u < U; ++u) uses.push_back({u, false});
      for (int u = U - 1; u >= 0; --u) uses.push_back({u, true});

      // Gathers are created `depth` uses ahead: creation order is issue order on the gather stream.
      std::vector<int64_t> gather_done(uses.size(), -1);   // last task of the gather for use i
      size_t next_gather = 0;
      auto issue_gathers_until = [&](size_t upto, int64_t after_compute) {
        for (; next_gather < uses.size() && next_gather <= upto; ++next_gather) {
          const Use& use = uses[next_gather];
          if (!gathers) continue;
          if (use.backward && use.unit >= U - keep) continue;  // still gathered from the forward pass
          gather_done[next_gather] = add_gather(use.unit, m, after_compute);
        }
      };
      issue_gathers_until(depth, prev_compute_);

      double bucket_elems = 0;
      std::vector<int64_t> compute_of_use(uses.size(), -1);
      for (size_t i = 0; i < uses.size(); ++i) {
        const Use& use = uses[i];
        std::vector<uint32_t> deps;
        if (gather_done[i] >= 0) deps.push_back(uint32_t(gather_done[i]));
        const UnitWork& unit = w_.units[use.unit];
        int64_t done;
        if (!use.backward) {
          done = add_compute(TaskKind::Forward, use.unit, m, deps);
        } else {
          if (in_.recompute && unit.kind == UnitKind::Block) add_compute(TaskKind::Recompute, use.unit, m, deps);
          done = add_compute(TaskKind::Backward, use.unit, m, in_.recompute && unit.kind == UnitKind::Block
                                                                   ? std::vector<uint32_t>{} : deps);
          // Gradient buckets fill in backward order; a bucket is reduced when full or at the last unit.
          bucket_elems += double(unit.params);
          bool flush = bucket_elems >= bucket_limit() || use.unit == 0;
          if (flush && bucket_elems > 0) {
            add_grad_reduction(bucket_elems, m, last, uint32_t(done), last_reduce);
            bucket_elems = 0;
          }
        }
        compute_of_use[i] = done;
        prev_compute_ = done;
        // The buffer of use i is free now: the gather depth+1 uses ahead may start after it.
        issue_gathers_until(i + depth + 1, done);
      }
    }

    // Optimizer step on the local shard, after every gradient reduction.
    const int64_t local = w_.params.total / std::max(1, in_.sharding.optimizer_shards);
    std::vector<uint32_t> deps = last_reduce;
    int64_t opt = add_task(TaskKind::Optimizer, StreamId::Compute, -1, g_.micro_steps - 1, deps,
                           compute_index({TaskKind::Optimizer, -1, local}));
    if (kind == StrategyKind::Zero1 || kind == StrategyKind::Zero2) {
      // DeepSpeed all-gathers the updated 16-bit parameters in allgather_bucket_size chunks (5e8).
      double remaining = double(w_.params.total);
      int64_t prev = opt;
      while (remaining > 0) {
        double chunk = std::min(remaining, 5e8);
        prev = add_task(TaskKind::ParamAllGatherAfterStep, StreamId::Gather, -1, g_.micro_steps - 1,
                        {uint32_t(prev)}, comm_index({CollectiveOp::AllGather, GroupKind::World, chunk * pe_, 1}));
        remaining -= chunk;
      }
    }
    return std::move(g_);
  }

 private:
  const ScheduleInputs& in_;
  const Workload& w_;
  TaskGraph g_;
  double pe_ = 2;
  int64_t prev_compute_ = -1;

  double bucket_limit() const {
    return in_.strategy.kind == StrategyKind::HSDP ? 1.0 : in_.sharding.grad_bucket_elements;
  }

  uint32_t compute_index(const ComputeOp& op) {
    for (size_t i = 0; i < g_.compute_ops.size(); ++i)
      if (g_.compute_ops[i] == op) return uint32_t(i);
    g_.compute_ops.push_back(op);
    return uint32_t(g_.compute_ops.size() - 1);
  }
  uint32_t comm_index(const CommOp& op) {
    for (size_t i = 0; i < g_.comm_ops.size(); ++i)
      if (g_.comm_ops[i] == op) return uint32_t(i);
    g_.comm_ops.push_back(op);
    return uint32_t(g_.comm_ops.size() - 1);
  }
  int representative_unit(int u) const {
    // All blocks are identical: they share one compute op (index of the first block).
    return w_.units[u].kind == UnitKind::Block ? 1 : u;
  }

  int64_t add_task(TaskKind kind, StreamId stream, int unit, int m, const std::vector<uint32_t>& deps, uint32_t op) {
    Task t{kind, stream, int32_t(unit), int32_t(m), uint32_t(g_.deps.size()), 0, op};
    for (uint32_t d : deps) g_.deps.push_back(d);
    t.deps_end = uint32_t(g_.deps.size());
    g_.tasks.push_back(t);
    return int64_t(g_.tasks.size() - 1);
  }

  int64_t add_compute(TaskKind kind, int unit, int m, const std::vector<uint32_t>& deps) {
    return add_task(kind, StreamId::Compute, unit, m, deps, compute_index({kind, representative_unit(unit), 0}));
  }

  // Parameter all-gather of one unit within the partition group; returns the task whose end means
  // "parameters ready".
  int64_t add_gather(int unit, int m, int64_t after_compute) {
    std::vector<uint32_t> deps;
    if (after_compute >= 0) deps.push_back(uint32_t(after_compute));
    const double bytes = pe_ * double(w_.units[unit].gather_params);
    const ParallelLayout& l = in_.layout;
    if (!l.hierarchical) {
      return add_task(TaskKind::ParamAllGather, StreamId::Gather, unit, m, deps,
                      comm_index({CollectiveOp::AllGather, GroupKind::Partition, bytes, 1}));
    }
    const int k = l.partition_group_nodes(), g = l.gpus_per_node;
    int64_t inter = add_task(TaskKind::ParamGatherInter, StreamId::Gather, unit, m, deps,
                             comm_index({CollectiveOp::AllGather, GroupKind::InterNode, bytes / g, 1}));
    int64_t copy = add_task(TaskKind::ParamGatherCopy, StreamId::Gather, unit, m, {uint32_t(inter)},
                            compute_index({TaskKind::ParamGatherCopy, -1, int64_t(bytes / g)}));
    return add_task(TaskKind::ParamGatherIntra, StreamId::Gather, unit, m, {uint32_t(copy)},
                    comm_index({CollectiveOp::AllGather, GroupKind::IntraNode, bytes, k}));
  }

  void add_grad_reduction(double elems, int m, bool last, uint32_t after, std::vector<uint32_t>& last_reduce) {
    const double bytes = pe_ * elems;
    const ParallelLayout& l = in_.layout;
    const StrategyKind kind = in_.strategy.kind;
    auto reduce = [&](TaskKind tk, CollectiveOp op, GroupKind grp, double b, uint32_t dep) {
      int64_t t = add_task(tk, StreamId::Reduce, -1, m, {dep}, comm_index({op, grp, b, 1}));
      if (last) last_reduce.push_back(uint32_t(t));
      return uint32_t(t);
    };
    switch (kind) {
      case StrategyKind::DDP:
        if (last && l.world > 1) reduce(TaskKind::GradAllReduce, CollectiveOp::AllReduce, GroupKind::World, bytes, after);
        break;
      case StrategyKind::Zero1:
        if (last && l.world > 1) reduce(TaskKind::GradReduceScatter, CollectiveOp::ReduceScatter, GroupKind::World, bytes, after);
        break;
      case StrategyKind::Zero2:
      case StrategyKind::Zero3:
        if (l.world > 1) reduce(TaskKind::GradReduceScatter, CollectiveOp::ReduceScatter, GroupKind::World, bytes, after);
        break;
      case StrategyKind::MiCS:
      case StrategyKind::HSDP: {
        uint32_t rs = after;
        if (l.partition_size > 1)
          rs = reduce(TaskKind::GradReduceScatter, CollectiveOp::ReduceScatter, GroupKind::Partition, bytes, after);
        const bool sync_now = in_.strategy.two_hop_sync ? last : true;
        if (sync_now && l.replication_size > 1)
          reduce(TaskKind::GradAllReduce, CollectiveOp::AllReduce, GroupKind::Replication, bytes / l.partition_size, rs);
        break;
      }
    }
  }
};

}  // namespace

TaskGraph build_schedule(const ScheduleInputs& in) { return Builder(in).build(); }

}  // namespace micsim
