#pragma once
// Strategy -> task graph of one training step (all micro-steps).
#include "sim/schedule/task_graph.hpp"
#include "sim/strategy/strategy.hpp"

namespace micsim {

struct ScheduleInputs {
  const Workload* workload = nullptr;
  StrategySpec strategy;
  ParallelLayout layout;
  ShardingSpec sharding;
  int micro_steps = 1;                 // accumulation steps of the step
  int max_built_micro_steps = 4;       // build at most this many (>= 4); 0 = all of them
};

TaskGraph build_schedule(const ScheduleInputs& in);

// The communicator shape behind a GroupKind for this layout.
GroupLayout group_layout(GroupKind g, const ParallelLayout& l);

}  // namespace micsim
