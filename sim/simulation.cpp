#include "sim/simulation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "models/calibration/error_bands.hpp"
#include "models/compute/jitter.hpp"
#include "models/compute/stragglers.hpp"
#include "sim/costs/uplink_sharing.hpp"
#include "sim/result_sources.hpp"

namespace micsim {

// The groups one rank meets within a micro-step: those of the collectives the micro-step runs. A
// micro-step without any (gradient accumulation without a sync) meets those of the step's last one.
static std::vector<GroupKind> jitter_sync_kinds(const TaskGraph& g) {
  auto groups_in = [&](int micro_step) {
    std::set<GroupKind> in;
    for (const Task& t : g.tasks)
      if (t.micro_step == micro_step && !is_compute(t.kind)) in.insert(g.comm_ops[t.op].group);
    return in;
  };
  std::set<GroupKind> in = groups_in(0);
  if (in.empty()) in = groups_in(g.micro_steps - 1);
  return {in.begin(), in.end()};
}

// The ranks one rank meets within a micro-step: the members of those groups, multiplied across
// dimensions (data-parallel groups, tensor and context groups, a pipeline neighbour).
static int jitter_sync_ranks(const std::vector<GroupKind>& kinds, const ParallelLayout& l) {
  auto has = [&](GroupKind k) { return std::find(kinds.begin(), kinds.end(), k) != kinds.end(); };
  int data = 1;  // data x context ranks met (ParallelLayout::dp counts both)
  if (has(GroupKind::World)) data = l.dp;
  else {
    if (has(GroupKind::Partition) || has(GroupKind::InterNode) || has(GroupKind::IntraNode)) data *= l.partition_size;
    if (has(GroupKind::Replication)) data *= l.replication_size;
    if (data == 1 && has(GroupKind::Context)) data = l.mp.cp;
  }
  int n = data * (has(GroupKind::Tensor) ? l.mp.tp : 1) * (has(GroupKind::PipelinePeer) ? 2 : 1);
  return std::clamp(n, 1, l.world);
}

// Weight of built micro-step m in the whole step: the graph holds the first, a few middle and the last
// micro-step; the middle ones stand for all the others (extrapolate_micro_steps).
static double micro_step_weight(const TaskGraph& g, int m) {
  const int built = g.micro_steps, total = g.total_micro_steps;
  const bool middle = m >= 1 && m <= built - 2;
  return middle && built > 2 && total > built ? double(total - 2) / double(built - 2) : 1.0;
}

// The points of a step where the compute stream waits for a collective (a compute task with a
// collective among its dependencies): the synchronisations a stalled rank delays. Collectives nothing
// waits on until the step's end (bucketed gradient reductions) count once, at the optimizer.
static double sync_points_per_step(const TaskGraph& g) {
  double points = 0;
  for (const Task& t : g.tasks) {
    if (!is_compute(t.kind) || t.kind == TaskKind::CollectiveMemoryTraffic || t.kind == TaskKind::HostWork) continue;
    bool waits = false;
    for (uint32_t d = t.deps_begin; d < t.deps_end && !waits; ++d) waits = !is_compute(g.tasks[g.deps[d]].kind);
    if (waits) points += micro_step_weight(g, t.micro_step);
  }
  return std::max(1.0, points);
}

// The mean rank's compute in one step (every compute-stream task, middle micro-steps extrapolated).
static double step_compute_seconds(const TaskGraph& g, const OpCosts& c) {
  double s = 0;
  for (const Task& t : g.tasks)
    if (is_compute(t.kind) && t.stream == StreamId::Compute && t.kind != TaskKind::PipelineBubble) s += c.compute_s[t.op] * micro_step_weight(g, t.micro_step);
  return s;
}

// One pipeline stage (the whole model without pipelining): its workload, memory (holding `in_flight`
// micro-batches' activations), schedule and costs.
static PreparedSimulation prepare_stage(const Scenario& sc, const PrepareOptions& opt, int stage, double in_flight) {
  PreparedSimulation p;
  p.scenario = sc;
  p.stage = stage;
  WorkloadOptions wo;
  wo.micro_batch = sc.training.micro_batch;
  wo.seq_len = sc.training.seq_len;
  wo.precision = sc.training.precision;
  wo.flash_attention = sc.training.flash_attention;
  wo.cross_entropy = sc.training.cross_entropy;
  wo.fused_kernels = sc.training.fused_kernels;
  wo.eager_attention = sc.training.eager_attention;
  wo.compile = sc.training.compile;
  wo.fp8 = sc.training.fp8;
  wo.fp8_recipe = sc.training.fp8_recipe;
  wo.checkpointing = sc.training.checkpointing;
  wo.checkpoint_every = sc.training.checkpoint_every;
  wo.recompute_early_stop = sc.training.recompute_early_stop.value_or(sc.strategy.framework && sc.strategy.framework->recompute_early_stop);
  wo.mp = sc.parallelism;
  wo.stage = stage;
  p.layout = make_layout(sc.strategy, sc.cluster.nodes, sc.cluster.instance.gpus_per_node, sc.parallelism);
  wo.weight_shards = param_shards(sc.strategy, p.layout);
  wo.fp8_all_gather = sc.training.fp8 && sc.strategy.fp8_all_gather && wo.weight_shards > 1;
  p.workload = build_workload(sc.model, wo);
  p.sharding = make_sharding(sc.strategy, p.layout, p.workload);
  p.memory = estimate_memory(p.workload, p.sharding,
                             {sc.training.checkpointing, sc.training.checkpoint_every, sc.training.flash_attention, in_flight,
                              sc.training.cross_entropy, sc.training.logits_kept_through_backward},
                             sc.training.optimizer, sc.cluster.instance.gpu.memory_bytes);
  p.network = NetworkParams::from_instance(sc.cluster.instance);
  sc.calibration.apply(p.network);
  p.compute_calibration = ComputeCalibration::defaults_for(sc.cluster.instance.gpu, sc.training.attention_kernel);
  sc.calibration.apply(p.compute_calibration);

  ScheduleInputs in;
  in.workload = &p.workload;
  in.strategy = sc.strategy;
  in.layout = p.layout;
  in.sharding = p.sharding;
  in.micro_steps = static_cast<int>(sc.grad_accumulation_steps());
  in.max_built_micro_steps = opt.max_built_micro_steps;
  p.graph = build_schedule(in);
  p.sync_kinds = jitter_sync_kinds(p.graph);
  p.sync_ranks = jitter_sync_ranks(p.sync_kinds, p.layout);

  ComputeModel compute(sc.cluster.instance.gpu, sc.training.precision, p.compute_calibration);
  CollectiveModel collectives(p.network);
  const double usable = p.memory.capacity_bytes - p.memory.reserve_bytes;
  p.memory_utilisation = usable > 0 ? p.memory.peak_bytes / usable : 1.0;
  // Past 100 % the step does not run at all; the slowdown is only meaningful up to full memory.
  p.compute_slowdown = p.compute_calibration.memory_pressure_factor(std::min(p.memory_utilisation, 1.0));
  // The slowdown is the caching allocator's retries when sharded parameters are gathered and freed
  // unit by unit (FSDP paper §5.4). A model-parallel (Megatron-style) run that gathers no parameters
  // keeps its gradients in one buffer allocated once (Megatron-LM DistributedDataParallel grad
  // buffers): no such churn.
  if (!sc.parallelism.none() && !p.sharding.gathers_parameters) p.compute_slowdown = 1.0;
  p.costs = cost_operations(p.graph, p.workload, p.layout, compute, collectives, sc.training.flash_attention,
                            sc.training.optimizer, p.compute_slowdown, optimizer_implementation_of(sc));
  p.sync_points = sync_points_per_step(p.graph);
  p.step_compute_s = step_compute_seconds(p.graph, p.costs);
  const FabricLayout fabric = fabric_layout(sc.cluster);
  const int nic_links = nic_links_of(sc.cluster.instance);
  for (size_t i = 0; i < p.graph.comm_ops.size(); ++i)
    p.uplink_slowdown.push_back(uplink_slowdown(p.graph.comm_ops[i].group, p.layout, fabric, nic_links, p.costs.comm[i].estimate));
  return p;
}

PreparedSimulation prepare_simulation(const Scenario& sc, const PrepareOptions& opt) {
  const ModelParallelism& mp = sc.parallelism;
  const int64_t m = sc.grad_accumulation_steps();
  if (mp.pp <= 1) return prepare_stage(sc, opt, 0, 1.0);
  // Pipeline stages differ: uneven splits give them different block counts, the first adds the
  // embedding, the last the head and the loss, and the earlier a stage the more micro-batches'
  // activations it holds. Each distinct stage gets its own workload, graph and costs; stages alike in
  // work share one, with the memory of the earliest of them (it holds the most).
  struct Shape {
    bool first, last;
    int layers, checkpointed;
    bool operator==(const Shape& o) const { return first == o.first && last == o.last && layers == o.layers && checkpointed == o.checkpointed; }
  };
  std::vector<Shape> keys;
  std::vector<PreparedSimulation> shapes;
  std::vector<size_t> shape_of(size_t(mp.pp));
  std::vector<int> stages_of;
  for (int s = 0; s < mp.pp; ++s) {
    const std::vector<int> layers = mp.stage_layer_indices(sc.model.layers, s);
    int checkpointed = 0;
    for (int l : layers) checkpointed += block_checkpointed(sc.training.checkpointing, sc.training.checkpoint_every, l);
    const Shape key{s == 0, s == mp.pp - 1, int(layers.size()), checkpointed};
    const auto it = std::find(keys.begin(), keys.end(), key);
    shape_of[size_t(s)] = size_t(it - keys.begin());
    if (it != keys.end()) {
      ++stages_of[shape_of[size_t(s)]];
      continue;
    }
    keys.push_back(key);
    stages_of.push_back(1);
    shapes.push_back(prepare_stage(sc, opt, s, mp.in_flight_micro_batches(m, s)));
  }
  // Fill and drain: a stage waits while every other stage works on one micro-batch (per model chunk:
  // 1/v of it), Narayanan et al. 2021 §2.2 with each stage's own slot. Equal stages give (pp-1)/v slots.
  std::vector<double> slot(shapes.size());
  double all_slots = 0;
  for (size_t k = 0; k < shapes.size(); ++k) slot[k] = micro_batch_slot_s(shapes[k].graph, shapes[k].costs);
  for (int s = 0; s < mp.pp; ++s) all_slots += slot[shape_of[size_t(s)]];
  for (size_t k = 0; k < shapes.size(); ++k)
    set_pipeline_bubble(shapes[k].graph, shapes[k].costs, (all_slots - slot[k]) / double(mp.virtual_stages));
  // The slowest stage sets the step (ties: the last stage, which has the head); the fullest memory is
  // the run's memory.
  size_t slowest = shapes.size() - 1, fullest = 0;
  std::vector<StageSummary> summaries;
  std::vector<double> step(shapes.size());
  for (size_t k = 0; k < shapes.size(); ++k) step[k] = simulate_analytic(shapes[k]).iteration_time_s;
  for (size_t k = 0; k < shapes.size(); ++k) {
    if (step[k] > step[slowest] * (1 + 1e-12)) slowest = k;
    if (shapes[k].memory.peak_bytes > shapes[fullest].memory.peak_bytes) fullest = k;
    summaries.push_back({shapes[k].stage, stages_of[k], keys[k].layers, keys[k].first, keys[k].last, slot[k], step[k],
                         shapes[k].memory.peak_bytes});
  }
  const MemoryEstimate memory = shapes[fullest].memory;
  const double utilisation = shapes[fullest].memory_utilisation;
  for (auto& s : shapes) {
    s.memory = memory;
    s.memory_utilisation = utilisation;
    s.stages = summaries;
  }
  PreparedSimulation p = std::move(shapes[slowest]);
  for (size_t k = 0; k < shapes.size(); ++k)
    if (k != slowest) p.other_stages.push_back(std::move(shapes[k]));
  return p;
}

// The analytic engine's costs: collectives whose rings cross oversubscribed uplinks take longer.
static OpCosts analytic_costs(const PreparedSimulation& p) {
  OpCosts c = p.costs;
  for (size_t i = 0; i < c.comm.size() && i < p.uplink_slowdown.size(); ++i) {
    const double f = p.uplink_slowdown[i];
    if (f <= 1.0) continue;
    CommCost& cc = c.comm[i];
    CollectiveEstimate& e = cc.estimate;
    const double before = e.latency_s + std::max(e.intra_time_s, e.inter_time_s);
    e.inter_time_s *= f;
    const double after = e.latency_s + std::max(e.intra_time_s, e.inter_time_s);
    cc.time_s += after - before;  // coalesced calls: the estimate covers all of them
    e.time_s = cc.time_s;
    if (e.inter_time_s > e.intra_time_s) e.bottleneck = Tier::Inter;
  }
  return c;
}

// Collectives as the engine ran them (SimGrid: with contention), every micro-step counted: a graph
// holds micro-steps 0, 1, 2 and the last; the omitted middle ones repeat 1 and 2.
static std::vector<CollectiveSummary> summarise_collectives(const PreparedSimulation& p, const StepTimeline& tl) {
  std::vector<CollectiveSummary> collectives;
  const TaskGraph& g = p.graph;
  std::map<std::pair<int, uint32_t>, size_t> row_of;
  std::map<size_t, double> calls;
  for (size_t i = 0; i < g.size(); ++i) {
    const Task& t = g[i];
    if (is_compute(t.kind)) continue;
    auto key = std::make_pair(int(t.kind), t.op);
    auto it = row_of.find(key);
    if (it == row_of.end()) {
      CollectiveSummary s;
      s.task = to_string(t.kind);
      if (t.kind == TaskKind::TensorParallelComm) s.task = std::string("tp_") + to_string(g.comm_ops[t.op].op);
      s.group = to_string(g.comm_ops[t.op].group);
      s.estimate = p.costs.comm[t.op].estimate;
      s.modelled_s = p.costs.comm[t.op].time_s;
      it = row_of.emplace(key, collectives.size()).first;
      collectives.push_back(s);
    }
    const double w = micro_step_weight(g, t.micro_step);
    calls[it->second] += w;
    collectives[it->second].total_s += w * (tl.tasks[i].end - tl.tasks[i].start);
  }
  for (auto& [row, n] : calls) {
    auto& c = collectives[row];
    c.calls = int64_t(std::llround(n));
    c.estimate.time_s = c.calls > 0 ? c.total_s / double(c.calls) : 0;
  }
  return collectives;
}

SimulationResult make_result(const PreparedSimulation& p, StepTimeline tl, const std::string& engine) {
  const Scenario& sc = p.scenario;
  std::vector<CollectiveSummary> collectives = summarise_collectives(p, tl);
  extrapolate_micro_steps(p.graph, tl);
  // The analytic engine ran the slowest rank's timeline (simulate_analytic): what its compute took
  // beyond the mean rank's is waiting for it, reported as idle.
  if (engine == "analytic") {
    const double f = analytic_jitter_factor(p);
    tl.idle_s += tl.compute_s * (1.0 - 1.0 / f);
    tl.compute_s /= f;
  }
  SimulationResult r;
  r.scenario = sc.name;
  r.engine = engine;
  r.world_size = p.layout.world;
  r.nodes = p.layout.nodes;
  r.partition_size = p.sharding.param_shards > 1 ? p.sharding.param_shards
                     : (sc.strategy.kind == StrategyKind::DDP ? 1 : p.sharding.optimizer_shards);
  r.replication_size = p.layout.dp / r.partition_size;
  r.grad_accumulation_steps = sc.grad_accumulation_steps();
  r.global_batch = sc.training.global_batch;
  r.seq_len = sc.training.seq_len;
  r.iteration_time_s = tl.iteration_time_s;
  r.compute_s = tl.compute_s;
  r.exposed_comm_s = tl.exposed_comm_s;
  r.idle_s = tl.idle_s;
  const double tokens = double(sc.training.global_batch) * double(sc.training.seq_len);
  r.samples_per_s = double(sc.training.global_batch) / tl.iteration_time_s;
  r.tokens_per_s = tokens / tl.iteration_time_s;
  {
    const ErrorBand& band = ErrorBands::builtin().for_prediction(sc.cluster.instance.gpu.arch, shards_parameters(sc.strategy));
    // error = predicted / published - 1, so the published value lies in predicted / (1 + error).
    r.tokens_per_s_low = r.tokens_per_s / (1 + band.q95);
    r.tokens_per_s_high = r.tokens_per_s / (1 + band.q05);
    r.iteration_time_s_low = tl.iteration_time_s * (1 + band.q05);
    r.iteration_time_s_high = tl.iteration_time_s * (1 + band.q95);
    r.interval_source = fmt::format("90 % interval from {} held-out published runs of {} source groups ({} GPUs, {} strategies): {}",
                                    band.rows, band.sources, band.gpu_generation, band.family, ErrorBands::builtin().source());
  }
  r.model_flops_per_step = model_flops_per_token(sc.model, p.workload.params, sc.training.seq_len) * tokens;
  r.hw_flops_per_step =
      hardware_flops_per_token(sc.model, p.workload.params, sc.training.seq_len, sc.training.checkpointing, sc.training.checkpoint_every,
                               recompute_skips_mlp_down(p.workload.options)) * tokens;
  r.peak_tflops_per_gpu = sc.cluster.instance.gpu.peak(sc.training.precision) / 1e12;
  r.tflops_per_gpu = r.model_flops_per_step / tl.iteration_time_s / r.world_size / 1e12;
  r.hw_tflops_per_gpu = r.hw_flops_per_step / tl.iteration_time_s / r.world_size / 1e12;
  r.mfu = r.tflops_per_gpu / r.peak_tflops_per_gpu;
  r.hfu = r.hw_tflops_per_gpu / r.peak_tflops_per_gpu;
  r.memory = p.memory;
  r.memory_utilisation = p.memory_utilisation;
  r.compute_slowdown = p.compute_slowdown;
  r.params = p.workload.params.total;
  r.model_name = sc.model.name;
  r.instance_name = sc.cluster.instance.name;
  r.strategy = to_string(sc.strategy.kind);
  r.parallelism = sc.parallelism;
  r.data_parallel_size = sc.data_parallel_size();
  for (size_t i = 0; i < p.graph.size() && i < tl.tasks.size(); ++i)
    if (p.graph[i].kind == TaskKind::PipelineBubble) r.pipeline_bubble_s += tl.tasks[i].end - tl.tasks[i].start;
  const FrameworkProfile& fw = *sc.strategy.framework;
  r.framework = fw.name + (sc.strategy.framework_version.empty() ? "" : " " + sc.strategy.framework_version);
  if (sc.cluster.instance.price_usd_per_hour) r.price_usd_per_hour = *sc.cluster.instance.price_usd_per_hour * sc.cluster.nodes;

  r.collectives = std::move(collectives);

  r.sources = result_sources(p, engine, r.interval_source);
  r.warnings = sc.warnings;
  // Where the cluster is larger than anything the fabric's terms were measured on, and no calibration of
  // this cluster's own replaces them, the collective times are an extrapolation: say so.
  r.network_note = sc.calibration.network_extrapolation_note(sc.cluster.instance.network.fabric, sc.cluster.nodes);
  if (!r.network_note.empty()) r.warnings.push_back(r.network_note);
  r.timeline = std::move(tl);
  return r;
}

// Jitter in expectation (the SimGrid engine samples per-node factors instead): compute between two
// synchronisations varies from rank to rank with coefficient of variation cv, and each
// synchronisation waits for the slowest of the ranks it joins, so noise is amplified by how many
// ranks a rank meets between syncs (system noise at scale: Hoefler, Schneider, Lumsdaine, SC'10). A
// ZeRO-3 rank meets the whole data-parallel world in every layer; a Megatron-LM rank its tensor-parallel
// group and a pipeline neighbour, the rest once per step. The step is then the timeline of the slowest
// rank: of the N it meets per micro-step, and of the world / N groups that meet at the step's end after
// its micro-steps (jitter_compute_factor). Its compute takes that factor longer: compute hidden under
// communication it did not trigger (a prefetched gather) absorbs that; compute on the critical path,
// or feeding a blocking collective, does not.
int jitter_sync_groups(const PreparedSimulation& p) { return std::max(1, p.layout.world / p.sync_ranks); }

double micro_step_compute_seconds(const PreparedSimulation& p) {
  return p.step_compute_s / double(std::max<int64_t>(1, p.scenario.grad_accumulation_steps()));
}

double effective_jitter_cv(const PreparedSimulation& p) {
  const ComputeCalibration& c = p.compute_calibration;
  return jitter_cv_over_window(c.jitter_cv, c.jitter_window_exponent, micro_step_compute_seconds(p));
}

double analytic_jitter_factor(const PreparedSimulation& p) {
  const int micro_steps = static_cast<int>(std::min<int64_t>(p.scenario.grad_accumulation_steps(), 1 << 30));
  return jitter_compute_factor(effective_jitter_cv(p), p.sync_ranks, jitter_sync_groups(p), micro_steps) +
         straggler_factor(p);
}

double straggler_factor(const PreparedSimulation& p) {
  const ComputeCalibration& c = p.compute_calibration;
  return straggler_slowdown(c.straggler_rate_per_s, c.straggler_stall_s, p.sync_ranks, p.layout.world, p.step_compute_s, p.sync_points);
}

SimulationResult simulate_analytic(const PreparedSimulation& p) {
  return make_result(p, run_analytic(p.graph, analytic_costs(p), analytic_jitter_factor(p)), "analytic");
}

}  // namespace micsim
