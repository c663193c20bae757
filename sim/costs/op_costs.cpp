#include "sim/costs/op_costs.hpp"

namespace micsim {

OpCosts cost_operations(const TaskGraph& g, const Workload& w, const ParallelLayout& l, const ComputeModel& compute,
                        const CollectiveModel& collectives, bool flash, Optimizer optimizer, double slowdown,
                        OptimizerImplementation optimizer_implementation) {
  OpCosts c;
  c.interference = compute.calibration().interference;
  for (const auto& op : g.compute_ops) {
    double t = 0;
    switch (op.pass) {
      case TaskKind::Forward: t = slowdown * compute.pass_time(w.units[op.unit].forward, false, flash); break;
      case TaskKind::Recompute: t = slowdown * compute.pass_time(w.units[op.unit].recompute, false, flash); break;
      case TaskKind::Backward: t = slowdown * compute.pass_time(w.units[op.unit].backward, true, flash); break;
      case TaskKind::Optimizer: t = compute.optimizer_time(op.params, optimizer, optimizer_implementation); break;
      case TaskKind::ParamGatherCopy:
      case TaskKind::ParamCopyOut:
      case TaskKind::GradBucketCopy: t = compute.copy_time(double(op.params)); break;
      case TaskKind::HostWork: t = double(op.params) * 1e-9; break;  // stored in nanoseconds
      case TaskKind::CollectiveMemoryTraffic: t = compute.collective_traffic_time(double(op.params)); break;
      default: break;
    }
    c.compute_s.push_back(t);
  }
  for (const auto& op : g.comm_ops) {
    GroupLayout layout = group_layout(op.group, l);
    CommCost cc;
    cc.estimate = collectives.estimate(op.op, op.bytes / op.coalesced, layout);
    // A coalesced group call of k equal collectives: k latencies, k times the bytes.
    cc.time_s = cc.estimate.time_s * op.coalesced + op.serial_host_s;
    // A list-form collective copies each of the group's n pieces between the user's tensors and the
    // flat buffer, one copy kernel per piece on the NCCL stream, before (reduce-scatter) or after
    // (all-gather) the NCCL kernel: part of the collective, as its latency is.
    if (op.list_form && layout.ranks > 1) {
      const double copies = layout.ranks * compute.copy_time(op.bytes / layout.ranks);
      cc.time_s += copies;
      cc.estimate.latency_s += copies / op.coalesced;
    }
    cc.estimate.bytes = op.bytes;
    cc.estimate.time_s = cc.time_s;
    cc.estimate.latency_s *= op.coalesced;
    cc.estimate.intra_time_s *= op.coalesced;  // the SimGrid engine sends these as flows: all k calls
    cc.estimate.inter_time_s *= op.coalesced;
    cc.estimate.intra_bytes_per_gpu *= op.coalesced;
    cc.estimate.inter_bytes_per_node *= op.coalesced;
    cc.uses_intra = cc.estimate.intra_bytes_per_gpu > 0;
    cc.uses_inter = cc.estimate.inter_bytes_per_node > 0;
    c.comm.push_back(cc);
  }
  // The pipeline bubble depends on the other stages: prepare_simulation sets it (set_pipeline_bubble).
  return c;
}

double micro_batch_slot_s(const TaskGraph& g, const OpCosts& c) {
  double slot = 0;
  for (const Task& t : g.tasks) {
    if (t.micro_step != 0 || t.kind == TaskKind::PipelineBubble || t.kind == TaskKind::Optimizer) continue;
    if (t.stream == StreamId::Compute) slot += c.compute_s[t.op];
    else if (t.stream == StreamId::ModelParallel && !is_compute(t.kind)) slot += c.comm[t.op].time_s;
  }
  return slot;
}

void set_pipeline_bubble(const TaskGraph& g, OpCosts& c, double seconds) {
  for (size_t i = 0; i < g.compute_ops.size(); ++i)
    if (g.compute_ops[i].pass == TaskKind::PipelineBubble) c.compute_s[i] = seconds;
}

}  // namespace micsim
