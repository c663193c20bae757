#pragma once
// From a scenario to a result: build the workload, the groups, the memory estimate and the schedule,
// cost the operations, run an engine, and derive the rates users read (samples/s, TFLOPS, MFU).
#include <optional>
#include <string>
#include <vector>

#include "models/memory/memory_model.hpp"
#include "sim/analytic/analytic_engine.hpp"
#include "sim/scenario/scenario.hpp"

namespace micsim {

// One distinct pipeline stage, as prepare_simulation evaluated it.
struct StageSummary {
  int stage = 0;             // the first stage of this shape (0 = the pipeline's first)
  int stages = 1;            // how many stages are alike
  int layers = 0;            // blocks
  bool embedding = false, head = false;
  double slot_s = 0;         // one micro-batch on its critical path (compute + blocking model-parallel communication)
  double step_s = 0;         // analytic step time with its bubble
  double peak_bytes = 0;     // memory of the earliest stage of this shape
};

struct PreparedSimulation {
  Scenario scenario;
  int stage = 0;                    // the pipeline stage whose graph this is: the slowest one
  std::vector<StageSummary> stages; // with pp > 1: every distinct stage
  Workload workload;
  ParallelLayout layout;
  ShardingSpec sharding;
  MemoryEstimate memory;            // with pp > 1: of the stage with the largest peak
  NetworkParams network;
  ComputeCalibration compute_calibration;
  TaskGraph graph;
  std::vector<GroupKind> sync_kinds;  // the groups a micro-step meets (its collectives'): who jitter waits for
  int sync_ranks = 1;  // ranks one rank meets within a micro-step, through those groups
  OpCosts costs;
  // Per step (all micro-steps): the points where compute waits for a collective, and the mean rank's
  // compute time; what a straggler's stall delays (models/compute/stragglers.hpp).
  double sync_points = 1;
  double step_compute_s = 0;
  double memory_utilisation = 0;  // peak / (capacity - reserve)
  double compute_slowdown = 1;    // from allocator pressure (ComputeCalibration)
  // Per collective (TaskGraph::comm_ops): how much its inter-node transfer stretches on oversubscribed
  // leaf uplinks (sim/costs/uplink_sharing.hpp). Applied by the analytic engine; the SimGrid engine
  // gets the same effect from its links.
  std::vector<double> uplink_slowdown;
  // With pp > 1: the other distinct stages, prepared alike (their bubbles set, the fullest memory): the
  // SimGrid engine runs each and keeps the slowest (the analytic engine already chose this one).
  std::vector<PreparedSimulation> other_stages;
};

struct PrepareOptions {
  int max_built_micro_steps = 4;  // identical middle micro-steps are extrapolated; 0 = build them all
};
PreparedSimulation prepare_simulation(const Scenario& sc, const PrepareOptions& opt = {});

struct CollectiveSummary {      // one row per unique collective of the step
  std::string task;             // e.g. param_all_gather
  std::string group;            // partition_group, replication_group, ...
  CollectiveEstimate estimate;  // algorithm, protocol, bytes per tier; time_s = the engine's mean time per call
  double modelled_s = 0;        // the collective model's time for one call, uncontended
  int64_t calls = 0;            // per step, every micro-step counted
  double total_s = 0;           // sum of the engine's times of every call of the step
};

struct SimulationResult {
  std::string scenario;
  std::string engine;
  int world_size = 0, partition_size = 0, replication_size = 0, nodes = 0;
  int64_t grad_accumulation_steps = 0;
  int64_t global_batch = 0, seq_len = 0;
  double iteration_time_s = 0, samples_per_s = 0, tokens_per_s = 0;
  // 90 % interval: where published runs of this GPU generation and strategy family fall relative to
  // micsim's prediction, out of sample (models/catalog/error_bands.yaml).
  double iteration_time_s_low = 0, iteration_time_s_high = 0, tokens_per_s_low = 0, tokens_per_s_high = 0;
  std::string interval_source;
  double tflops_per_gpu = 0, hw_tflops_per_gpu = 0, mfu = 0, hfu = 0;
  double model_flops_per_step = 0, hw_flops_per_step = 0;
  double peak_tflops_per_gpu = 0;
  double compute_s = 0, exposed_comm_s = 0, idle_s = 0;
  MemoryEstimate memory;
  double memory_utilisation = 0, compute_slowdown = 1;
  std::vector<CollectiveSummary> collectives;
  std::optional<double> price_usd_per_hour;      // cluster, from the catalog
  int64_t params = 0;
  std::string model_name, instance_name, strategy;
  std::string framework = "ideal";               // profile that ran it (and version, when given)
  ModelParallelism parallelism;                  // tp / pp / cp (all 1: data parallelism only)
  int data_parallel_size = 0;                    // GPUs / (tp·pp·cp)
  double pipeline_bubble_s = 0;                  // the stage's fill-and-drain wait per step
  std::vector<std::string> sources;              // where the numbers come from
  std::vector<std::string> warnings;
  // The cluster spans more nodes than its fabric's (or its calibration's) network terms were measured on, or
  // the fabric's terms are assumed: the line saying so (also in warnings), "" otherwise. plan lists it.
  std::string network_note;
  StepTimeline timeline;                         // per-task times (for traces)
};

// Fills the rates and summaries of a result from a timeline computed by any engine.
SimulationResult make_result(const PreparedSimulation& p, StepTimeline timeline, const std::string& engine);

// Runs the analytic engine.
SimulationResult simulate_analytic(const PreparedSimulation& p);
// What the analytic engine stretches compute-stream tasks by under jitter: the slowest of the
// `sync_ranks` ranks a micro-step meets, and of the groups that meet at the step's end
// (jitter_compute_factor, models/compute/jitter.hpp).
double analytic_jitter_factor(const PreparedSimulation& p);
// The compute noise both engines use: jitter_cv over this step's micro-step (the mean rank's compute per
// micro-step), through jitter_window_exponent (jitter_cv_over_window, models/compute/jitter.hpp).
double micro_step_compute_seconds(const PreparedSimulation& p);
double effective_jitter_cv(const PreparedSimulation& p);
// Its straggler part: the step's compute stretched by other ranks' stalls (models/compute/stragglers.hpp).
double straggler_factor(const PreparedSimulation& p);
// The world / sync_ranks groups of such ranks, which meet only at the step's end, after its micro-steps.
int jitter_sync_groups(const PreparedSimulation& p);

}  // namespace micsim
