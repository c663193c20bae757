#pragma once
// Costs of the unique operations of a task graph: seconds for each compute op, and for each
// collective the estimate of the collective library (algorithm, protocol, time, bytes per tier).
// Computed once per graph, so an engine's per-task work is a table lookup.
#include <vector>

#include "models/collective/collective.hpp"
#include "models/compute/compute_model.hpp"
#include "sim/schedule/schedule.hpp"

namespace micsim {

struct CommCost {
  CollectiveEstimate estimate;
  double time_s = 0;
  bool uses_intra = false;   // occupies NVLink/NVSwitch
  bool uses_inter = false;   // occupies the node's NICs
};

struct OpCosts {
  std::vector<double> compute_s;   // per TaskGraph::compute_ops
  std::vector<CommCost> comm;      // per TaskGraph::comm_ops
  double interference = 0;         // compute speed lost while a collective runs (ComputeCalibration)
  double duration(const TaskGraph& g, const Task& t) const {
    return is_compute(t.kind) ? compute_s[t.op] : comm[t.op].time_s;
  }
};

// What one micro-batch costs a pipeline stage on its critical path: its compute and its blocking
// model-parallel communication in micro-step 0 (the bubble and the optimizer step excluded).
double micro_batch_slot_s(const TaskGraph& g, const OpCosts& c);
// Sets the pipeline bubble's length (the graph's PipelineBubble task, if any) to `seconds`.
void set_pipeline_bubble(const TaskGraph& g, OpCosts& c, double seconds);

OpCosts cost_operations(const TaskGraph& g, const Workload& w, const ParallelLayout& l, const ComputeModel& compute,
                        const CollectiveModel& collectives, bool flash_attention, Optimizer optimizer,
                        double compute_slowdown = 1.0, OptimizerImplementation optimizer_implementation = OptimizerImplementation::Fused);

}  // namespace micsim
