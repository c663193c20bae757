#include "sim/schedule/task_graph.hpp"

namespace micsim {

const char* to_string(StreamId s) {
  switch (s) {
    case StreamId::Compute: return "compute";
    case StreamId::Gather: return "gather";
    case StreamId::Reduce: return "reduce";
    case StreamId::Host: return "host";
    case StreamId::ModelParallel: return "model_parallel";
  }
  return "?";
}

const char* to_string(TaskKind k) {
  switch (k) {
    case TaskKind::Forward: return "forward";
    case TaskKind::Backward: return "backward";
    case TaskKind::Recompute: return "recompute";
    case TaskKind::Optimizer: return "optimizer_step";
    case TaskKind::ParamAllGather: return "param_all_gather";
    case TaskKind::ParamGatherInter: return "param_all_gather_inter_node";
    case TaskKind::ParamGatherCopy: return "param_gather_rearrange_copy";
    case TaskKind::ParamGatherIntra: return "param_all_gather_intra_node";
    case TaskKind::GradReduceScatter: return "grad_reduce_scatter";
    case TaskKind::GradAllReduce: return "grad_all_reduce";
    case TaskKind::ParamAllGatherAfterStep: return "param_all_gather_after_step";
    case TaskKind::ParamBroadcastAfterStep: return "param_broadcast_after_step";
    case TaskKind::HostWork: return "host";
    case TaskKind::ParamCopyOut: return "param_copy_out";
    case TaskKind::GradBucketCopy: return "grad_bucket_copy";
    case TaskKind::TensorParallelComm: return "tensor_parallel_comm";
    case TaskKind::ContextParallelComm: return "context_parallel_kv_exchange";
    case TaskKind::PipelineSend: return "pipeline_send";
    case TaskKind::PipelineBubble: return "pipeline_bubble";
    case TaskKind::CollectiveMemoryTraffic: return "collective_hbm_traffic";
  }
  return "?";
}

bool is_compute(TaskKind k) {
  return k == TaskKind::Forward || k == TaskKind::Backward || k == TaskKind::Recompute || k == TaskKind::Optimizer ||
         k == TaskKind::ParamGatherCopy || k == TaskKind::HostWork || k == TaskKind::ParamCopyOut || k == TaskKind::GradBucketCopy ||
         k == TaskKind::PipelineBubble || k == TaskKind::CollectiveMemoryTraffic;
}

const char* to_string(GroupKind g) {
  switch (g) {
    case GroupKind::World: return "world";
    case GroupKind::Partition: return "partition_group";
    case GroupKind::Replication: return "replication_group";
    case GroupKind::InterNode: return "inter_node_group";
    case GroupKind::IntraNode: return "intra_node_group";
    case GroupKind::Tensor: return "tensor_parallel_group";
    case GroupKind::Context: return "context_parallel_group";
    case GroupKind::PipelinePeer: return "pipeline_neighbours";
  }
  return "?";
}

}  // namespace micsim
