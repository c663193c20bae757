#include <fmt/format.h>

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
      {"peak_bytes_per_gpu", r.memory.peak_bytes},
      {"model_states_bytes", r.memory.model_states_bytes},
      {"activations_bytes", r.memory.activations_bytes},
      {"buffers_bytes", r.memory.buffers_bytes},
      {"params_bytes", r.memory.params_bytes},
      {"grads_bytes", r.memory.grads_bytes},
      {"optimizer_bytes", r.memory.optimizer_bytes},
      {"gathered_params_bytes", r.memory.gathered_params_bytes},
      {"grad_buffer_bytes", r.memory.grad_buffer_bytes},
      {"optimizer_temp_bytes", r.memory.optimizer_temp_bytes},
      {"capacity_bytes", r.memory.capacity_bytes},
      {"reserve_bytes", r.memory.reserve_bytes},
      {"headroom_bytes", r.memory.headroom_bytes()},
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
                     {"bytes", e.bytes},
                     {"algorithm", to_string(e.algorithm)},
                     {"protocol", to_string(e.protocol)},
                     {"time_s", e.time_s},
                     {"calls_per_step", c.calls},
                     {"total_s", c.total_s},
                     {"intra_bytes_per_gpu", e.intra_bytes_per_gpu},
                     {"inter_bytes_per_node", e.inter_bytes_per_node},
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
