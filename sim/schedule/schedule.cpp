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
//    all-gather the updated parameters (InternEvo: one broadcast per rank of its shard; FSDP's
//    SHARD_GRAD_OP instead gathers each unit before its forward, and keeps it through its backward).
//  * What the data-parallel gathers and reductions move through the GPU's HBM while compute runs is
//    charged to the compute stream: one collective_hbm_traffic task before each pass (note_traffic).
//
// The framework profile (models/framework) says how a real implementation departs from that:
//  * gather granularity: one collective per unit (FlatParameter, coalesced fetch) or one per parameter
//    tensor (DeepSpeed <= 0.5), small tensors kept gathered (persistence threshold);
//  * a host timeline (the framework's Python thread): each use's hooks and launches take host time;
//    GPU work waits for the host task that launches it; a device synchronize at each fetch makes the
//    host (and so the next launches) wait for all GPU work; a rate limiter makes it wait for the
//    compute of an older unit; a bucket flush can wait for the previous bucket's reduction;
//  * copies: gathered parameters copied out of the flat buffer, gradients copied into the bucket.
// With the `ideal` profile none of these exists and the graph is micsim's original schedule.
#include "sim/schedule/schedule.hpp"

#include "models/collective/hbm_traffic.hpp"

#include <algorithm>
#include <cmath>
#include <set>

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
    case GroupKind::IntraNode: {
      const int m = l.partition_members_per_node();
      return GroupLayout::make(m, 1, std::max(1, l.gpus_per_node / m));
    }
    case GroupKind::Tensor: return l.tensor_group();
    case GroupKind::Context: return l.context_group();
    case GroupKind::PipelinePeer: return l.pipeline_pair();
  }
  return l.world_group();
}

namespace {

class Builder {
 public:
  explicit Builder(const ScheduleInputs& in) : in_(in), w_(*in.workload), fw_(*in.strategy.framework) {
    g_.total_micro_steps = in.micro_steps;
    g_.micro_steps = (in.max_built_micro_steps > 0 && in.micro_steps > std::max(4, in.max_built_micro_steps))
                         ? std::max(4, in.max_built_micro_steps)
                         : in.micro_steps;
    g_.units = static_cast<int>(w_.units.size());
    pe_ = bytes_per_element(w_.options.precision);
    reduce_pe_ = in.sharding.reduce_element_bytes(pe_);
    host_ = fw_.models_host();
    persistence_ = in.strategy.persistence_threshold >= 0 ? in.strategy.persistence_threshold : fw_.persistence_threshold;
  }

  TaskGraph build() {
    const StrategyKind kind = in_.strategy.kind;
    const bool gathers = in_.sharding.gathers_parameters;
    const int U = g_.units;
    // Units kept gathered across the forward->backward turn (DeepSpeed reuse distance; not FSDP).
    int keep = 0;
    if (gathers && kind != StrategyKind::HSDP && fw_.keep_across_turn) {
      double budget = in_.strategy.max_live_parameters;
      for (int u = U - 1; u >= 0 && budget >= double(w_.units[u].gather_params); --u) {
        budget -= double(w_.units[u].gather_params);
        ++keep;
      }
    }
    const int depth = !gathers ? 0 : fw_.prefetch_units >= 0 ? fw_.prefetch_units : in_.sharding.prefetch_units;
    const bool per_tensor = fw_.gather == Granularity::Tensor;

    std::vector<uint32_t> last_reduce;  // reduce-stream tasks the optimizer waits for
    // Pipeline fill and drain: the stage waits while the others work (Narayanan et al. 2021, §2.2). Its
    // length depends on every stage's costs: prepare_simulation sets it (set_pipeline_bubble).
    if (in_.layout.mp.pp > 1)
      add_task(TaskKind::PipelineBubble, StreamId::Compute, -1, 0, {}, compute_index({TaskKind::PipelineBubble, -1, 0}));
    for (int m = 0; m < g_.micro_steps; ++m) {
      const bool last = m == g_.micro_steps - 1;
      // The sequence of unit uses in this micro-step: forward 0..U-1, backward U-1..0.
      struct Use { int unit; bool backward; };
      std::vector<Use> uses;
      for (int u = 0; u < U; ++u) uses.push_back({u, false});
      for (int u = U - 1; u >= 0; --u) uses.push_back({u, true});
      auto needs_gather = [&](size_t i) {
        // FSDP2 under pipelining gathers each unit once, in the first micro-batch's forward, and keeps it.
        if (in_.sharding.unsharded_through_step) return gathers && m == 0 && !uses[i].backward;
        // FSDP SHARD_GRAD_OP keeps each unit gathered from its forward to its backward.
        if (in_.sharding.gathered_through_backward) return gathers && !uses[i].backward;
        return gathers && !(uses[i].backward && uses[i].unit >= U - keep);  // else still gathered from the forward
      };

      // Gathers are created `depth` uses ahead: creation order is issue order on the gather stream.
      // A use's pieces: one per unit, or one per parameter tensor; gathered[i] = how many are issued.
      std::vector<std::vector<double>> pieces(uses.size());
      for (size_t i = 0; i < uses.size(); ++i)
        if (needs_gather(i)) pieces[i] = gather_pieces(uses[i].unit);
      std::vector<size_t> gathered(uses.size(), 0);
      std::vector<int64_t> gather_done(uses.size(), -1);   // last task of the gathers of use i
      std::vector<int64_t> compute_of_use(uses.size(), -1);
      // Issues pieces [gathered[i], upto) of use i, after `after` (a buffer to be free) and `launch`.
      auto issue = [&](size_t i, size_t upto, int64_t after, int64_t launch) {
        int issued = 0;
        for (; gathered[i] < std::min(upto, pieces[i].size()); ++gathered[i], ++issued)
          gather_done[i] = add_gather(uses[i].unit, m, pieces[i][gathered[i]], after, launch);
        return issued;
      };
      // Without a host timeline, gathers are issued in use order as buffers free up (micsim's
      // original schedule); the first `depth`+1 right away.
      size_t next_gather = 0;
      auto issue_ahead_until = [&](size_t upto, int64_t after_compute) {
        for (; next_gather < uses.size() && next_gather <= upto; ++next_gather)
          issue(next_gather, pieces[next_gather].size(), after_compute, -1);
      };
      if (!host_) issue_ahead_until(depth, prev_compute_);

      double bucket_elems = 0;
      std::vector<int64_t> bucket_tensors;  // per-tensor reduction: the tensors in the bucket
      for (size_t i = 0; i < uses.size(); ++i) {
        const Use& use = uses[i];
        const UnitWork& unit = w_.units[use.unit];
        int64_t launch = -1;
        if (host_) launch = host_for_use(i, depth, per_tensor, pieces, gathered, compute_of_use, issue);
        std::vector<uint32_t> deps;
        if (gather_done[i] >= 0) deps.push_back(uint32_t(gather_done[i]));
        if (launch >= 0) deps.push_back(uint32_t(launch));
        // Model parallelism: the stage's input arrives from its neighbour, ring attention's keys and
        // values travel while the block computes, and the previous block's tensor-parallel collectives
        // must be done (they sit between its GEMMs and this one's).
        if (i == 0 && in_.layout.mp.pp > 1) mp_waits_.push_back(add_pipeline_send(m));
        if (w_.cp_kv_bytes > 0 && unit.kind == UnitKind::Block) add_context_exchange(use.unit, m, use.backward);
        deps.insert(deps.end(), mp_waits_.begin(), mp_waits_.end());
        mp_waits_.clear();
        if (gather_done[i] >= 0 && fw_.copy_out > 0)
          deps = {uint32_t(add_copy(TaskKind::ParamCopyOut, use.unit, m, fw_.copy_out * w_.units[use.unit].gather_bytes(pe_), deps))};
        int64_t done;
        if (!use.backward) {
          const int64_t before = prev_compute_;
          done = add_compute(TaskKind::Forward, use.unit, m, deps);
          // Overlapped (async TP): the collectives start with the block and the next block waits.
          add_tensor_parallel(unit, m, in_.layout.mp.tp_comm_overlap ? before : done, TaskKind::Forward);
        } else {
          const bool recompute = !unit.recompute.empty();
          std::vector<uint32_t> bdeps = recompute ? std::vector<uint32_t>{} : deps;
          int64_t rc = -1;
          if (recompute) {
            rc = add_compute(TaskKind::Recompute, use.unit, m, deps);
            // A block recomputed in full replays its forward's tensor-parallel collectives.
            if (unit.recompute_whole_block && add_tensor_parallel(unit, m, rc, TaskKind::Recompute)) {
              bdeps.insert(bdeps.end(), mp_waits_.begin(), mp_waits_.end());
              mp_waits_.clear();
            }
          }
          // Backward tensor-parallel collectives overlap the weight-gradient GEMMs (Megatron-LM's
          // asynchronous input-gradient all-reduce / reduce-scatter): they start with the backward and
          // only the next unit's backward waits for them. Created before the backward so that engines
          // see them running while it computes (interference).
          const std::vector<uint32_t> waits = std::move(mp_waits_);
          mp_waits_.clear();
          const int64_t sp_gather = add_sequence_parallel_grad_gather(unit, m, recompute ? rc : prev_compute_, bdeps);
          if (sp_gather >= 0) bdeps.push_back(uint32_t(sp_gather));
          const bool overlapped = in_.layout.mp.tp_backward_overlap;
          if (overlapped) add_tensor_parallel(unit, m, recompute ? rc : prev_compute_, TaskKind::Backward);
          done = add_compute(TaskKind::Backward, use.unit, m, bdeps);
          // Synchronous (Megatron-LM before its asynchronous all-reduce): after the block's gradients.
          if (!overlapped) add_tensor_parallel(unit, m, done, TaskKind::Backward);
          mp_waits_.insert(mp_waits_.begin(), waits.begin(), waits.end());
          if (fw_.bucket_copy > 0 && (reduces_every_micro_step() || last))
            done = add_copy(TaskKind::GradBucketCopy, use.unit, m, fw_.bucket_copy * pe_ * double(unit.params), {uint32_t(done)});
          // Gradient buckets fill in backward order; a bucket is reduced when full or at the last unit.
          bucket_elems += double(unit.params);
          for (int64_t t : unit.tensors) bucket_tensors.push_back(t);
          bool flush = bucket_elems >= bucket_limit() || use.unit == 0;
          if (flush && bucket_elems > 0) {
            add_grad_reduction(bucket_elems, bucket_tensors, m, last, uint32_t(done), last_reduce);
            bucket_elems = 0;
            bucket_tensors.clear();
          }
        }
        compute_of_use[i] = done;
        prev_compute_ = done;
        // The buffer of use i is free now: the gather depth+1 uses ahead may start after it.
        if (!host_) issue_ahead_until(i + depth + 1, done);
      }
      // The stage's input gradient goes back to its neighbour before the next micro-batch's work.
      if (in_.layout.mp.pp > 1) mp_waits_.push_back(add_pipeline_send(m));
    }

    // Optimizer step on the local shard, after every gradient reduction.
    const int64_t local = w_.rank_params / std::max(1, in_.sharding.optimizer_shards);
    std::vector<uint32_t> deps = last_reduce;
    deps.insert(deps.end(), mp_waits_.begin(), mp_waits_.end());
    mp_waits_.clear();
    int64_t opt = add_task(TaskKind::Optimizer, StreamId::Compute, -1, g_.micro_steps - 1, deps,
                           compute_index({TaskKind::Optimizer, -1, local}));
    if ((kind == StrategyKind::Zero1 || kind == StrategyKind::Zero2) && fw_.param_broadcast_per_rank) {
      // InternEvo: each rank of the ZeRO-1 group (all dp ranks, or its `zero1 = p` group) broadcasts
      // its updated shard in turn: p broadcasts of 1/p of the parameters (hybrid_zero_optim.py
      // broadcast_params), one after the other on one stream.
      const int p = std::max(1, in_.layout.partition_size);
      const GroupKind group = p == in_.layout.dp ? GroupKind::World : GroupKind::Partition;
      const double shard = pe_ * double(w_.rank_params) / p;
      int64_t prev = opt;
      for (int r = 0; r < p && p > 1; ++r)
        prev = add_task(TaskKind::ParamBroadcastAfterStep, StreamId::Gather, -1, g_.micro_steps - 1, {uint32_t(prev)},
                        comm_index({CollectiveOp::Broadcast, group, shard, 1}));
    } else if (kind == StrategyKind::Zero1 || (kind == StrategyKind::Zero2 && !in_.sharding.gathered_through_backward)) {
      // DeepSpeed all-gathers the updated 16-bit parameters in allgather_bucket_size chunks (5e8).
      double remaining = double(w_.rank_params);
      int64_t prev = opt;
      while (remaining > 0) {
        double chunk = std::min(remaining, 5e8);
        prev = add_task(TaskKind::ParamAllGatherAfterStep, StreamId::Gather, -1, g_.micro_steps - 1,
                        {uint32_t(prev)}, comm_index({CollectiveOp::AllGather, GroupKind::World, chunk * pe_, 1}));
        remaining -= chunk;
      }
    } else if (in_.sharding.gathers_parameters && fw_.gather == Granularity::Tensor && persistent_elems_ > 0) {
      // Persistent (small) parameters are gathered once per step, after the optimizer (DeepSpeed _post_step).
      add_task(TaskKind::ParamAllGatherAfterStep, StreamId::Gather, -1, g_.micro_steps - 1, {uint32_t(opt)},
               comm_index({CollectiveOp::AllGather, GroupKind::Partition, persistent_elems_ * pe_, 1}));
    }
    return std::move(g_);
  }

 private:
  const ScheduleInputs& in_;
  const Workload& w_;
  const FrameworkProfile& fw_;
  TaskGraph g_;
  double pe_ = 2;
  double reduce_pe_ = 2;  // bytes per gradient element on the wire (strategy.reduce_dtype)
  bool host_ = false;
  double persistence_ = 0;
  double persistent_elems_ = 0;  // per step, tensor granularity
  int64_t prev_compute_ = -1;
  int64_t prev_reduce_ = -1;     // last reduction task (a bucket flush may wait for it)
  int64_t pending_host_wait_ = -1;
  // HBM bytes of the data-parallel collectives issued since the last compute task: they run while
  // the next one computes and take memory bandwidth from it (models/collective/hbm_traffic.hpp).
  double pending_traffic_bytes_ = 0;
  void note_traffic(CollectiveOp op, GroupKind group, double bytes) {
    pending_traffic_bytes_ += collective_hbm_bytes(op, bytes, group_layout(group, in_.layout).ranks);
  }
  int64_t last_task_[kStreamCount] = {-1, -1, -1, -1, -1};

  bool reduces_every_micro_step() const {
    return in_.strategy.kind != StrategyKind::DDP && in_.strategy.kind != StrategyKind::Zero1 && !in_.sharding.unsharded_through_step;
  }

  double bucket_limit() const {
    if (in_.strategy.kind == StrategyKind::HSDP || fw_.reduce == Granularity::Unit) return 1.0;  // one unit at a time
    return in_.sharding.grad_bucket_elements;
  }

  // The pieces a unit is gathered in (bytes of each collective).
  std::vector<double> gather_pieces(int unit) {
    const UnitWork& u = w_.units[unit];
    if (fw_.gather != Granularity::Tensor) return {u.gather_bytes(pe_)};  // FP8 weights at 1 byte (fp8_all_gather)
    std::vector<double> out;
    double small = 0;
    for (int64_t t : u.tensors) {
      if (double(t) >= persistence_) out.push_back(pe_ * double(t));
      else small += double(t);
    }
    if (u.gather_params > u.params) out.push_back(pe_ * double(u.gather_params - u.params));  // tied weights
    if (unit_seen_.insert(unit).second) persistent_elems_ += small;
    return out;
  }
  std::set<int> unit_seen_;

  // The host task of use i: it launches the gathers this use issues (its own, if not prefetched,
  // and the prefetch of the next ones) and then the use's compute. It waits for all device work
  // after a device synchronize; for the compute of an older use under a rate limiter; and for a
  // reduction that a bucket flush waits for.
  template <class Issue>
  int64_t host_for_use(size_t i, int depth, bool per_tensor, const std::vector<std::vector<double>>& pieces,
                       std::vector<size_t>& gathered, const std::vector<int64_t>& compute_of_use, Issue& issue) {
    std::vector<uint32_t> deps;
    if (fw_.device_sync)
      for (int s = 0; s < kStreamCount; ++s)
        if (last_task_[s] >= 0 && s != int(StreamId::Host)) deps.push_back(uint32_t(last_task_[s]));
    if (fw_.max_inflight > 0 && i >= size_t(fw_.max_inflight) && compute_of_use[i - fw_.max_inflight] >= 0)
      deps.push_back(uint32_t(compute_of_use[i - fw_.max_inflight]));
    if (pending_host_wait_ >= 0) deps.push_back(uint32_t(pending_host_wait_)), pending_host_wait_ = -1;
    const int64_t h = add_task(TaskKind::HostWork, StreamId::Host, -1, current_micro_step_, deps, 0);
    // What the host launches now: this use's gathers not yet in flight, then the prefetch.
    const int64_t buffer = i >= size_t(depth) + 1 ? compute_of_use[i - depth - 1] : prev_compute_;
    int launched = issue(i, pieces[i].size(), fw_.device_sync ? -1 : buffer, h);
    if (per_tensor) {
      if (i + 1 < pieces.size()) launched += issue(i + 1, size_t(fw_.prefetch_tensors), -1, h);
    } else {
      for (size_t j = i + 1; j <= i + size_t(depth) && j < pieces.size(); ++j) {
        const int64_t free = j >= size_t(depth) + 1 ? compute_of_use[j - depth - 1] : prev_compute_;
        launched += issue(j, pieces[j].size(), free, h);
      }
    }
    // Launch costs of serial collectives are on the gather stream already (CommOp::serial_host_s).
    const double seconds = fw_.host_per_unit_s + (fw_.sync_per_collective ? 0.0 : launched * fw_.host_per_collective_s);
    g_.tasks[size_t(h)].op = compute_index({TaskKind::HostWork, -1, int64_t(std::llround(seconds * 1e9))});
    return h;
  }
  int current_micro_step_ = 0;
  std::vector<uint32_t> mp_waits_;  // model-parallel communication the next compute waits for

  // Tensor-parallel collectives of one pass of a unit, after its compute (Megatron: not overlapped).
  // Per block: two all-reduces of the activations (after the attention and MLP row-parallel GEMMs;
  // in backward, of the input gradients of the column-parallel ones); with sequence parallelism each
  // becomes an all-gather before and a reduce-scatter after (Korthikanti et al. 2022, §4.2.2), and the
  // backward also re-gathers the stored inputs for the weight gradients (overlapped, as all backward
  // tensor-parallel collectives). The vocabulary-parallel embedding reduces its output (forward)
  // and the head gathers its input (forward) and reduces its input gradient (backward).
  bool add_tensor_parallel(const UnitWork& unit, int m, int64_t after, TaskKind pass) {
    const double a = w_.tp_activation_bytes;
    if (a <= 0) return false;
    const bool sp = in_.layout.mp.sequence_parallel;
    const bool backward = pass == TaskKind::Backward;
    int k = 0;
    if (unit.kind == UnitKind::Block) k = 2;
    else if (unit.kind == UnitKind::Embedding) k = backward ? 0 : 1;
    else k = (backward || sp) ? 1 : 0;
    if (k == 0) return false;
    // A recompute that stops early stops at the MLP down projection (or, an eager FP8 linear, right after
    // it): the all-reduce or reduce-scatter after it never runs (workload.cpp early_stopped_recompute).
    const bool stops_early = pass == TaskKind::Recompute && unit.recompute_stops_early;
    int64_t last = after;
    auto add = [&](CollectiveOp op, int count) {
      std::vector<uint32_t> deps;
      if (last >= 0) deps.push_back(uint32_t(last));
      last = add_task(TaskKind::TensorParallelComm, StreamId::ModelParallel, unit.index, m, deps,
                      comm_index({op, GroupKind::Tensor, count * a, count}));
    };
    const int after_row_parallel = stops_early ? k - 1 : k;
    if (!sp) {
      add(CollectiveOp::AllReduce, after_row_parallel);
    } else if (unit.kind == UnitKind::Block) {
      // Forward: gather before each column-parallel GEMM, reduce-scatter after each row-parallel one.
      // Backward: the two stored (sequence-split) inputs are re-gathered while the input gradients
      // compute, and those are reduce-scattered while the weight gradients compute (Megatron-LM
      // LinearWithGradAccumulationAndAsyncCommunication); the blocking gather of the output gradient
      // is add_sequence_parallel_grad_gather.
      add(CollectiveOp::AllGather, k);
      add(CollectiveOp::ReduceScatter, after_row_parallel);
    } else {
      add(unit.kind == UnitKind::Head && !backward ? CollectiveOp::AllGather : CollectiveOp::ReduceScatter, k);
    }
    mp_waits_.push_back(uint32_t(last));
    return true;
  }

  // With sequence parallelism the backward of each row-parallel GEMM (attention output, MLP down)
  // starts by all-gathering its sequence-split output gradient (the backward of the forward's
  // reduce-scatter): nothing computes meanwhile, so the block's backward waits for it. Without
  // sequence parallelism that backward is the identity. With tp_comm_overlap (Megatron-LM
  // --tp-comm-overlap, torchtitan async TP) the gather is decomposed and pipelined with the GEMM that
  // consumes it, like the forward's: it overlaps, and only the next block waits. Returns the blocking
  // task, or -1.
  int64_t add_sequence_parallel_grad_gather(const UnitWork& unit, int m, int64_t after, const std::vector<uint32_t>& waits) {
    const double a = w_.tp_activation_bytes;
    if (a <= 0 || !in_.layout.mp.sequence_parallel || unit.kind != UnitKind::Block) return -1;
    std::vector<uint32_t> deps = waits;
    if (after >= 0) deps.push_back(uint32_t(after));
    const int64_t t = add_task(TaskKind::TensorParallelComm, StreamId::ModelParallel, unit.index, m, deps,
                               comm_index({CollectiveOp::AllGather, GroupKind::Tensor, 2 * a, 2}));
    if (!in_.layout.mp.tp_comm_overlap) return t;
    mp_waits_.push_back(uint32_t(t));
    return -1;
  }

  // Ring attention: the block's keys and values (forward), and their gradients too (backward: twice the
  // bytes) pass around the context group while attention runs; the block after waits for the ring.
  void add_context_exchange(int unit, int m, bool backward) {
    std::vector<uint32_t> deps;
    if (prev_compute_ >= 0) deps.push_back(uint32_t(prev_compute_));
    const double bytes = (backward ? 2.0 : 1.0) * w_.cp_kv_bytes;
    mp_waits_.push_back(uint32_t(add_task(TaskKind::ContextParallelComm, StreamId::ModelParallel, unit, m, deps,
                                          comm_index({CollectiveOp::AllGather, GroupKind::Context, bytes, 1}))));
  }

  // Point-to-point between neighbouring stages: in the steady 1F1B state a stage sends one tensor and
  // receives one per forward and per backward (Megatron send_forward_recv_backward), modelled as a
  // two-rank exchange in which each side sends the activation (nccl-tests all_gather bytes = 2x). With
  // v virtual stages a micro-batch crosses v stage boundaries on this rank each way.
  uint32_t add_pipeline_send(int m) {
    std::vector<uint32_t> deps;
    if (prev_compute_ >= 0) deps.push_back(uint32_t(prev_compute_));
    const int v = in_.layout.mp.virtual_stages;
    return uint32_t(add_task(TaskKind::PipelineSend, StreamId::ModelParallel, -1, m, deps,
                             comm_index({CollectiveOp::AllGather, GroupKind::PipelinePeer, 2.0 * v * w_.pp_activation_bytes, v})));
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
    return w_.units[u].kind == UnitKind::Block ? w_.first_block() : u;
  }

  int64_t add_task(TaskKind kind, StreamId stream, int unit, int m, const std::vector<uint32_t>& deps, uint32_t op) {
    Task t{kind, stream, int32_t(unit), int32_t(m), uint32_t(g_.deps.size()), 0, op};
    for (uint32_t d : deps) g_.deps.push_back(d);
    t.deps_end = uint32_t(g_.deps.size());
    g_.tasks.push_back(t);
    last_task_[int(stream)] = int64_t(g_.tasks.size() - 1);
    current_micro_step_ = m;
    return int64_t(g_.tasks.size() - 1);
  }

  int64_t add_compute(TaskKind kind, int unit, int m, const std::vector<uint32_t>& deps) {
    if (pending_traffic_bytes_ > 0) {  // on the compute stream before the pass, waiting for nothing
      add_task(TaskKind::CollectiveMemoryTraffic, StreamId::Compute, -1, m, {},
               compute_index({TaskKind::CollectiveMemoryTraffic, -1, int64_t(pending_traffic_bytes_)}));
      pending_traffic_bytes_ = 0;
    }
    return add_task(kind, StreamId::Compute, unit, m, deps, compute_index({kind, representative_unit(unit), 0}));
  }

  int64_t add_copy(TaskKind kind, int unit, int m, double bytes, const std::vector<uint32_t>& deps) {
    return add_task(kind, StreamId::Compute, unit, m, deps, compute_index({kind, -1, int64_t(bytes)}));
  }

  // All-gather of `bytes` of one unit within the partition group; returns the task whose end means
  // "parameters ready". Waits for `after_compute` (a buffer to be free) and `launch` (its host task).
  int64_t add_gather(int unit, int m, double bytes, int64_t after_compute, int64_t launch) {
    std::vector<uint32_t> deps;
    if (after_compute >= 0) deps.push_back(uint32_t(after_compute));
    if (launch >= 0) deps.push_back(uint32_t(launch));
    const double serial = fw_.sync_per_collective ? fw_.host_per_collective_s : 0.0;
    const ParallelLayout& l = in_.layout;
    if (!l.hierarchical) {
      note_traffic(CollectiveOp::AllGather, GroupKind::Partition, bytes);
      return add_task(TaskKind::ParamAllGather, StreamId::Gather, unit, m, deps,
                      comm_index({CollectiveOp::AllGather, GroupKind::Partition, bytes, 1, serial, fw_.gather_list_form}));
    }
    const int k = l.partition_group_nodes(), g = l.gpus_per_node;
    note_traffic(CollectiveOp::AllGather, GroupKind::InterNode, bytes / g);
    note_traffic(CollectiveOp::AllGather, GroupKind::IntraNode, bytes);
    int64_t inter = add_task(TaskKind::ParamGatherInter, StreamId::Gather, unit, m, deps,
                             comm_index({CollectiveOp::AllGather, GroupKind::InterNode, bytes / g, 1, serial}));
    int64_t copy = add_task(TaskKind::ParamGatherCopy, StreamId::Gather, unit, m, {uint32_t(inter)},
                            compute_index({TaskKind::ParamGatherCopy, -1, int64_t(bytes / g)}));
    return add_task(TaskKind::ParamGatherIntra, StreamId::Gather, unit, m, {uint32_t(copy)},
                    comm_index({CollectiveOp::AllGather, GroupKind::IntraNode, bytes, k}));
  }

  void add_grad_reduction(double elems, const std::vector<int64_t>& tensors, int m, bool last, uint32_t after,
                          std::vector<uint32_t>& last_reduce) {
    // Gradients accumulated unsharded over the micro-batches (FSDP2 under pipelining) are
    // reduce-scattered once, after the last micro-batch's backward.
    if (in_.sharding.unsharded_through_step && !last) return;
    const ParallelLayout& l = in_.layout;
    const StrategyKind kind = in_.strategy.kind;
    // The collectives of one reduction: one for the bucket, or one per parameter tensor (DeepSpeed <= 0.5).
    std::vector<double> parts;
    if (fw_.reduce == Granularity::Tensor) {
      for (int64_t t : tensors) parts.push_back(reduce_pe_ * double(t));
    } else {
      parts.push_back(reduce_pe_ * elems);
    }
    // A bucket flush waits (on the host) for the previous bucket's reduction.
    if (fw_.bucket_host_wait && prev_reduce_ >= 0) pending_host_wait_ = prev_reduce_;
    const double serial = fw_.sync_per_collective ? fw_.host_per_collective_s : 0.0;
    auto reduce = [&](TaskKind tk, CollectiveOp op, GroupKind grp, double b, uint32_t dep) {
      // List-form reduce-scatters are DeepSpeed's stage-3 path (partition_parameters.py): strategies that
      // gather parameters; its ZeRO-1/2 optimizer reduces another way (stage2.py).
      const bool list_form = fw_.reduce_list_form && op == CollectiveOp::ReduceScatter && in_.sharding.gathers_parameters;
      int64_t t = add_task(tk, StreamId::Reduce, -1, m, {dep}, comm_index({op, grp, b, 1, serial, list_form}));
      note_traffic(op, grp, b);
      if (last) last_reduce.push_back(uint32_t(t));
      prev_reduce_ = t;
      return uint32_t(t);
    };
    // DeepSpeed with contiguous_gradients false reduces by flatten + all-reduce (docs/frameworks.md 1.4).
    // InternEvo all-reduces each ZeRO-1 bucket (reduce_tensor without a destination rank).
    const CollectiveOp scatter = in_.strategy.contiguous_gradients && !fw_.grad_all_reduce ? CollectiveOp::ReduceScatter
                                                                                           : CollectiveOp::AllReduce;
    uint32_t last_rs = after;
    for (double bytes : parts) {
      switch (kind) {
        case StrategyKind::DDP:
          if (last && l.dp > 1) reduce(TaskKind::GradAllReduce, CollectiveOp::AllReduce, GroupKind::World, bytes, after);
          break;
        case StrategyKind::Zero1:
          if (last && l.dp > 1)
            reduce(scatter == CollectiveOp::AllReduce ? TaskKind::GradAllReduce : TaskKind::GradReduceScatter, scatter, GroupKind::World, bytes,
                   after);
          break;
        case StrategyKind::Zero2:
        case StrategyKind::Zero3:
          if (l.dp > 1) reduce(TaskKind::GradReduceScatter, scatter, GroupKind::World, bytes, after);
          break;
        case StrategyKind::MiCS:
        case StrategyKind::HSDP:
          if (l.partition_size > 1) last_rs = reduce(TaskKind::GradReduceScatter, scatter, GroupKind::Partition, bytes, after);
          break;
      }
    }
    // Hop 2: the shard of the whole bucket is all-reduced across the replication group in one
    // (coalesced) call, at every micro-step or at the accumulation boundary only.
    if ((kind == StrategyKind::MiCS || kind == StrategyKind::HSDP) && l.replication_size > 1) {
      const bool deferred = in_.strategy.two_hop_sync && !fw_.hsdp_allreduce_every_microstep;
      if (deferred ? last : true)
        reduce(TaskKind::GradAllReduce, CollectiveOp::AllReduce, GroupKind::Replication, reduce_pe_ * elems / l.partition_size, last_rs);
    }
  }
};

}  // namespace

TaskGraph build_schedule(const ScheduleInputs& in) { return Builder(in).build(); }

}  // namespace micsim
