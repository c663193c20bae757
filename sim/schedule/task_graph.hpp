#pragma once
// The task graph of one training step for one representative GPU: what runs on which stream and
// after what. Engines decide how long each task takes (analytic costs, or SimGrid flows) and when
// it runs; the graph itself holds no time.
//
// Streams: compute (forward, backward, recompute, optimizer), gather (parameter all-gathers, issued
// ahead of use: prefetch) and reduce (gradient reduce-scatter / all-reduce). Tasks on one stream run
// in creation order, as CUDA streams do; a task also waits for its dependencies. A fourth timeline,
// host, is the framework's Python thread (hooks, launches, synchronisations): present only when the
// framework profile has host costs or host-side waits; GPU work it launches waits for it.
#include <cstdint>
#include <string>
#include <vector>

#include "models/collective/collective.hpp"
#include "models/workload/workload.hpp"

namespace micsim {

// ModelParallel: tensor-, context- and pipeline-parallel communication (its own NCCL communicators
// and stream in Megatron-LM); present only with model parallelism.
enum class StreamId : uint8_t { Compute = 0, Gather = 1, Reduce = 2, Host = 3, ModelParallel = 4 };
constexpr int kStreamCount = 5;
const char* to_string(StreamId s);

enum class TaskKind : uint8_t {
  Forward, Backward, Recompute, Optimizer,                 // compute
  ParamAllGather,                                          // flat all-gather in the partition group
  ParamGatherInter, ParamGatherCopy, ParamGatherIntra,     // MiCS hierarchical all-gather, 3 steps
  GradReduceScatter,                                       // hop 1 (or ZeRO-2/3 over all GPUs)
  GradAllReduce,                                           // hop 2 (replication group) or DDP
  ParamAllGatherAfterStep,                                 // ZeRO-1/2: gather updated parameters
  ParamBroadcastAfterStep,                                 // ZeRO-1/2 (InternEvo): each rank broadcasts its shard
  HostWork,                                                // host timeline: hooks, launches, waits
  ParamCopyOut,                                            // gathered parameters copied out of the flat buffer
  GradBucketCopy,                                          // gradients copied into the reduce bucket
  TensorParallelComm,                                      // activations of a block (all-reduce, or all-gather/reduce-scatter)
  ContextParallelComm,                                     // ring attention: keys and values around the context group
  PipelineSend,                                            // activations / gradients to the neighbouring stage
  PipelineBubble,                                          // the stage waits: pipeline fill and drain
  CollectiveMemoryTraffic,                                 // HBM bytes of overlapped collectives, charged to compute
};
const char* to_string(TaskKind k);
bool is_compute(TaskKind k);

// Which communicator a collective runs on.
enum class GroupKind : uint8_t { World, Partition, Replication, InterNode, IntraNode, Tensor, Context, PipelinePeer };
const char* to_string(GroupKind g);

struct CommOp {
  CollectiveOp op = CollectiveOp::AllGather;
  GroupKind group = GroupKind::Partition;
  double bytes = 0;        // nccl-tests convention (whole gathered buffer / whole input / buffer)
  int coalesced = 1;       // sub-operations issued in one group call (hierarchical step 3: k)
  double serial_host_s = 0;  // host time that must pass before it starts (launch after a device synchronize)
  bool list_form = false;    // staged through a flat buffer: one device copy per rank's piece (FrameworkProfile)
  bool operator==(const CommOp& o) const {
    return op == o.op && group == o.group && bytes == o.bytes && coalesced == o.coalesced && serial_host_s == o.serial_host_s &&
           list_form == o.list_form;
  }
};

struct ComputeOp {
  TaskKind pass = TaskKind::Forward;
  int unit = 0;            // workload unit index (Forward/Backward/Recompute)
  int64_t params = 0;      // Optimizer: local parameters updated; copies: bytes copied; HostWork: nanoseconds;
                           // PipelineBubble: 0 (its time is set from every stage's costs, prepare_simulation)
  bool operator==(const ComputeOp& o) const { return pass == o.pass && unit == o.unit && params == o.params; }
};

struct Task {
  TaskKind kind;
  StreamId stream;
  int32_t unit;            // workload unit (-1 if none)
  int32_t micro_step;
  uint32_t deps_begin, deps_end;  // range in TaskGraph::deps
  uint32_t op;             // index into compute_ops or comm_ops (by is_compute(kind))
};

struct TaskGraph {
  std::vector<Task> tasks;
  std::vector<uint32_t> deps;
  std::vector<ComputeOp> compute_ops;   // unique compute operations (blocks share one)
  std::vector<CommOp> comm_ops;         // unique collectives
  // Micro-steps between the first and the last are identical: the graph holds at most a few
  // (first, two middle, last) and engines' results extrapolate the rest by the measured period of a
  // middle one (see extrapolate_micro_steps). micro_steps counts those built, total_micro_steps all.
  int micro_steps = 1;
  int total_micro_steps = 1;
  int units = 0;

  const Task& operator[](size_t i) const { return tasks[i]; }
  size_t size() const { return tasks.size(); }
};

}  // namespace micsim
