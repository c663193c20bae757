#include <fmt/format.h>

#include "models/io/json_text.hpp"
#include "sim/report/report.hpp"

namespace micsim {

nlohmann::json to_json(const SimulationResult& r) {
  using nlohmann::json;
  json j;
  j["scenario"] = r.scenario;
  j["engine"] = r.engine;
  j["model"] = r.model_name;
  j["params"] = r.params;
  j["instance"] = r.instance_name;
  j["nodes"] = r.nodes;
  j["strategy"] = r.strategy;
  j["framework"] = r.framework;
  if (!r.parallelism.none()) {
    const ModelParallelism& mp = r.parallelism;
    j["parallelism"] = {{"tp", mp.tp}, {"pp", mp.pp}, {"cp", mp.cp}, {"dp", r.data_parallel_size}, {"virtual_stages", mp.virtual_stages},
                        {"schedule", to_string(mp.schedule)}, {"sequence_parallel", mp.sequence_parallel},
                        {"pipeline_bubble_s", r.pipeline_bubble_s}};
  }
  j["iteration_time_s_low"] = r.iteration_time_s_low;
  j["iteration_time_s_high"] = r.iteration_time_s_high;
  j["tokens_per_s_low"] = r.tokens_per_s_low;
  j["tokens_per_s_high"] = r.tokens_per_s_high;
  j["interval_source"] = r.interval_source;
  j["flop_convention"] = "model FLOPs 6N + 12·L·h·s per token (PaLM / llm-foundry: attention counted non-causal, recompute not "
                         "counted); hardware FLOPs add what activation checkpointing recomputes";
  j["world_size"] = r.world_size;
  j["partition_size"] = r.partition_size;
  j["replication_size"] = r.replication_size;
  j["grad_accumulation_steps"] = r.grad_accumulation_steps;
  j["global_batch"] = r.global_batch;
  j["seq_len"] = r.seq_len;
  j["iteration_time_s"] = r.iteration_time_s;
  j["samples_per_s"] = r.samples_per_s;
  j["tokens_per_s"] = r.tokens_per_s;
  j["tflops_per_gpu"] = r.tflops_per_gpu;
  j["hw_tflops_per_gpu"] = r.hw_tflops_per_gpu;
  j["peak_tflops_per_gpu"] = r.peak_tflops_per_gpu;
  j["mfu"] = r.mfu;
  j["hfu"] = r.hfu;
  j["model_flops_per_step"] = r.model_flops_per_step;
  j["hw_flops_per_step"] = r.hw_flops_per_step;
  j["fits_in_memory"] = r.memory.fits;
  j["memory"] = {
      {"peak_bytes_per_gpu", json_bytes(r.memory.peak_bytes)},
      {"allocator_reserved_bytes", json_bytes(r.memory.allocator_reserved_bytes)},
      {"model_states_bytes", json_bytes(r.memory.model_states_bytes)},
      {"activations_bytes", json_bytes(r.memory.activations_bytes)},
      {"buffers_bytes", json_bytes(r.memory.buffers_bytes)},
      {"params_bytes", json_bytes(r.memory.params_bytes)},
      {"grads_bytes", json_bytes(r.memory.grads_bytes)},
      {"optimizer_bytes", json_bytes(r.memory.optimizer_bytes)},
      {"gathered_params_bytes", json_bytes(r.memory.gathered_params_bytes)},
      {"grad_buffer_bytes", json_bytes(r.memory.grad_buffer_bytes)},
      {"optimizer_temp_bytes", json_bytes(r.memory.optimizer_temp_bytes)},
      {"capacity_bytes", json_bytes(r.memory.capacity_bytes)},
      {"reserve_bytes", json_bytes(r.memory.reserve_bytes)},
      {"headroom_bytes", json_bytes(r.memory.headroom_bytes())},
      {"working_set_bytes", json_bytes(r.memory.working_set_bytes)},
      {"gpus_to_fit", r.memory.gpus_to_fit},
      {"utilisation", r.memory_utilisation},
  };
  j["compute_slowdown_from_memory_pressure"] = r.compute_slowdown;
  j["breakdown"] = {{"compute_s", r.compute_s}, {"exposed_comm_s", r.exposed_comm_s}, {"idle_s", r.idle_s}};
  json colls = json::array();
  for (const auto& c : r.collectives) {
    const auto& e = c.estimate;
    colls.push_back({{"task", c.task},
                     {"op", to_string(e.op)},
                     {"group", c.group},
                     {"ranks", e.layout.ranks},
                     {"nodes", e.layout.nodes},
                     {"bytes", json_bytes(e.bytes)},
                     {"algorithm", to_string(e.algorithm)},
                     {"protocol", to_string(e.protocol)},
                     {"time_s", e.time_s},
                     {"modelled_s", c.modelled_s},
                     {"calls_per_step", c.calls},
                     {"total_s", c.total_s},
                     {"intra_bytes_per_gpu", json_bytes(e.intra_bytes_per_gpu)},
                     {"inter_bytes_per_node", json_bytes(e.inter_bytes_per_node)},
                     {"bottleneck", to_string(e.bottleneck)}});
  }
  j["collectives"] = colls;
  if (r.price_usd_per_hour) {
    j["cost"] = {{"usd_per_hour", *r.price_usd_per_hour},
                 {"usd_per_step", *r.price_usd_per_hour * r.iteration_time_s / 3600.0}};
  } else {
    j["cost"] = nullptr;
  }
  j["sources"] = r.sources;
  j["warnings"] = r.warnings;
  return j;
}

}  // namespace micsim

namespace micsim {

// The inverse of to_json for what reports and the planner read (used to resume a plan).
namespace {
// The fields that to_json writes through json_bytes (rounded), in a fixed order.
std::vector<double*> rounded_memory_fields(MemoryEstimate& m) {
  return {&m.peak_bytes, &m.allocator_reserved_bytes, &m.model_states_bytes, &m.activations_bytes, &m.buffers_bytes, &m.params_bytes, &m.grads_bytes,
          &m.optimizer_bytes, &m.gathered_params_bytes, &m.grad_buffer_bytes, &m.optimizer_temp_bytes, &m.capacity_bytes,
          &m.reserve_bytes, &m.working_set_bytes};
}
}  // namespace

nlohmann::json to_exact_json(const SimulationResult& r) {
  nlohmann::json j = to_json(r);
  MemoryEstimate m = r.memory;  // (the field list takes a mutable estimate: one list for both directions)
  nlohmann::json mem = nlohmann::json::array(), colls = nlohmann::json::array();
  for (double* v : rounded_memory_fields(m)) mem.push_back(*v);
  for (const auto& c : r.collectives)
    colls.push_back({c.estimate.bytes, c.estimate.intra_bytes_per_gpu, c.estimate.inter_bytes_per_node});
  j["exact"] = {{"memory", mem}, {"collectives", colls}};
  return j;
}

SimulationResult result_from_json(const nlohmann::json& j) {
  SimulationResult r;
  r.scenario = j.at("scenario");
  r.engine = j.at("engine");
  r.model_name = j.at("model");
  r.params = j.at("params");
  r.instance_name = j.at("instance");
  r.nodes = j.at("nodes");
  r.strategy = j.at("strategy");
  if (j.contains("framework")) r.framework = j.at("framework");
  if (j.contains("parallelism")) {
    const auto& m = j.at("parallelism");
    r.parallelism.tp = m.at("tp"), r.parallelism.pp = m.at("pp"), r.parallelism.cp = m.at("cp");
    r.parallelism.virtual_stages = m.at("virtual_stages");
    const std::string sch = m.at("schedule");
    r.parallelism.schedule = sch == "interleaved" ? PipelineSchedule::Interleaved : sch == "gpipe" ? PipelineSchedule::GPipe : PipelineSchedule::OneFOneB;
    r.parallelism.sequence_parallel = m.at("sequence_parallel");
    r.data_parallel_size = m.at("dp");
    r.pipeline_bubble_s = m.at("pipeline_bubble_s");
  }
  if (j.contains("iteration_time_s_low")) {
    r.iteration_time_s_low = j.at("iteration_time_s_low"), r.iteration_time_s_high = j.at("iteration_time_s_high");
    r.tokens_per_s_low = j.at("tokens_per_s_low"), r.tokens_per_s_high = j.at("tokens_per_s_high");
    r.interval_source = j.at("interval_source");
  }
  r.world_size = j.at("world_size");
  r.partition_size = j.at("partition_size");
  r.replication_size = j.at("replication_size");
  r.grad_accumulation_steps = j.at("grad_accumulation_steps");
  r.global_batch = j.at("global_batch");
  r.seq_len = j.at("seq_len");
  r.iteration_time_s = j.at("iteration_time_s");
  r.samples_per_s = j.at("samples_per_s");
  r.tokens_per_s = j.at("tokens_per_s");
  r.tflops_per_gpu = j.at("tflops_per_gpu");
  r.hw_tflops_per_gpu = j.at("hw_tflops_per_gpu");
  r.peak_tflops_per_gpu = j.at("peak_tflops_per_gpu");
  r.mfu = j.at("mfu");
  r.hfu = j.at("hfu");
  r.model_flops_per_step = j.at("model_flops_per_step");
  r.hw_flops_per_step = j.at("hw_flops_per_step");
  const auto& m = j.at("memory");
  r.memory.peak_bytes = m.at("peak_bytes_per_gpu");
  r.memory.allocator_reserved_bytes = m.value("allocator_reserved_bytes", r.memory.peak_bytes);  // plans written before it
  r.memory.model_states_bytes = m.at("model_states_bytes");
  r.memory.activations_bytes = m.at("activations_bytes");
  r.memory.buffers_bytes = m.at("buffers_bytes");
  r.memory.params_bytes = m.at("params_bytes");
  r.memory.grads_bytes = m.at("grads_bytes");
  r.memory.optimizer_bytes = m.at("optimizer_bytes");
  r.memory.gathered_params_bytes = m.at("gathered_params_bytes");
  r.memory.grad_buffer_bytes = m.at("grad_buffer_bytes");
  r.memory.optimizer_temp_bytes = m.at("optimizer_temp_bytes");
  r.memory.capacity_bytes = m.at("capacity_bytes");
  r.memory.reserve_bytes = m.at("reserve_bytes");
  r.memory.working_set_bytes = m.at("working_set_bytes");
  r.memory.gpus_to_fit = m.at("gpus_to_fit");
  r.memory.fits = j.at("fits_in_memory");
  r.memory_utilisation = m.at("utilisation");
  r.compute_slowdown = j.at("compute_slowdown_from_memory_pressure");
  const auto& b = j.at("breakdown");
  r.compute_s = b.at("compute_s");
  r.exposed_comm_s = b.at("exposed_comm_s");
  r.idle_s = b.at("idle_s");
  for (const auto& c : j.at("collectives")) {
    CollectiveSummary s;
    s.task = c.at("task");
    s.group = c.at("group");
    s.calls = c.at("calls_per_step");
    if (c.contains("modelled_s")) s.modelled_s = c.at("modelled_s");
    s.total_s = c.at("total_s");
    auto& e = s.estimate;
    e.op = *parse_collective_op(c.at("op").get<std::string>());
    e.layout = GroupLayout::make(c.at("ranks"), c.at("nodes"));
    e.bytes = c.at("bytes");
    e.algorithm = parse_nccl_algorithm(c.at("algorithm").get<std::string>()).value_or(NcclAlgorithm::NVLSTree);
    e.protocol = parse_protocol(c.at("protocol").get<std::string>()).value_or(Protocol::Simple);
    e.time_s = c.at("time_s");
    e.intra_bytes_per_gpu = c.at("intra_bytes_per_gpu");
    e.inter_bytes_per_node = c.at("inter_bytes_per_node");
    e.bottleneck = c.at("bottleneck") == "inter-node" ? Tier::Inter : Tier::Intra;
    r.collectives.push_back(s);
  }
  if (!j.at("cost").is_null()) r.price_usd_per_hour = j.at("cost").at("usd_per_hour").get<double>();
  for (const auto& s : j.at("sources")) r.sources.push_back(s);
  for (const auto& w : j.at("warnings")) r.warnings.push_back(w);
  if (j.contains("exact")) {
    const auto& x = j.at("exact");
    auto fields = rounded_memory_fields(r.memory);
    const auto& mem = x.at("memory");
    const auto& colls = x.at("collectives");
    if (mem.size() != fields.size() || colls.size() != r.collectives.size()) throw std::runtime_error("malformed exact block");
    for (size_t i = 0; i < fields.size(); ++i) *fields[i] = mem.at(i).get<double>();
    for (size_t i = 0; i < colls.size(); ++i) {
      auto& e = r.collectives[i].estimate;
      e.bytes = colls[i].at(0), e.intra_bytes_per_gpu = colls[i].at(1), e.inter_bytes_per_node = colls[i].at(2);
    }
  }
  return r;
}

}  // namespace micsim
