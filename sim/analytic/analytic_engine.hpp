#pragma once
// The analytic engine: executes the task graph in creation order, with analytic costs (again, until
// compute slowed by overlapping collectives settles: run_analytic).
// A task starts when its stream is free and its dependencies are done; a collective's transfer then
// takes its bottleneck tier's (NVLink's or the NICs') free time, so the bytes of collectives on the
// same links add up in any placement order (two that run together share the tier fairly unless a
// placed task already waits for the earlier one), and collectives on different tiers overlap. No contention
// between GPUs beyond what the collective model already includes (NIC sharing inside a node); that
// is the SimGrid engine's job.
#include <vector>

#include "sim/costs/op_costs.hpp"
#include "sim/schedule/task_graph.hpp"

namespace micsim {

struct TaskTiming {
  double start = 0, end = 0;
};

struct StepTimeline {
  double iteration_time_s = 0;
  double compute_s = 0;        // busy time of the compute stream
  double exposed_comm_s = 0;   // communication not hidden behind compute
  double idle_s = 0;           // neither
  std::vector<TaskTiming> tasks;  // per task, same order as the graph
};

// `compute_factor` stretches every compute-stream task (not the pipeline bubble, not host work or copies
// on communication streams), as the SimGrid engine stretches a node's compute by its jitter factor.
StepTimeline run_analytic(const TaskGraph& g, const OpCosts& costs, double compute_factor = 1.0);

// Splits a step into compute, exposed communication and idle, from per-task times (shared with the
// SimGrid engine so both report the same way).
// `tiers_busy`: times a tier is moving bytes outside any task (the analytic engine's owed work).
void summarize_timeline(const TaskGraph& g, StepTimeline& t, const std::vector<std::pair<double, double>>& tiers_busy = {});

// When the graph holds fewer micro-steps than the step has, adds the omitted middle ones: each takes
// the period between the ends of built micro-steps 1 and 2, with that period's compute and exposed
// communication. No-op for a full graph.
void extrapolate_micro_steps(const TaskGraph& g, StepTimeline& t);

}  // namespace micsim
