#include <fmt/format.h>

#include <cmath>

#include "sim/report/report.hpp"

namespace micsim {

std::string human_bytes(double b) {
  const double gib = 1024.0 * 1024.0 * 1024.0;
  if (std::fabs(b) >= gib) return fmt::format("{:.2f} GiB", b / gib);
  if (std::fabs(b) >= 1024.0 * 1024.0) return fmt::format("{:.1f} MiB", b / (1024.0 * 1024.0));
  if (std::fabs(b) >= 1024.0) return fmt::format("{:.1f} KiB", b / 1024.0);
  return fmt::format("{:.0f} B", b);
}

std::string human_seconds(double s) {
  if (s >= 1.0) return fmt::format("{:.3f} s", s);
  if (s >= 1e-3) return fmt::format("{:.2f} ms", s * 1e3);
  return fmt::format("{:.1f} us", s * 1e6);
}

std::string memory_shortfall_text(const MemoryEstimate& m, int world_size) {
  const double usable = m.capacity_bytes - m.reserve_bytes;
  if (m.gpus_to_fit == 0)
    return fmt::format("the working set that sharding cannot shrink (activations {} + gathered parameters and gradient "
                       "buckets {}) alone exceeds the {} usable per GPU: lower micro_batch, enable "
                       "activation_checkpointing, or pick a GPU with more memory",
                       human_bytes(m.activations_bytes), human_bytes(m.working_set_bytes - m.activations_bytes), human_bytes(usable));
  if (m.gpus_to_fit > world_size)
    return fmt::format("even fully sharded over all {} GPUs (ZeRO-3, or MiCS with p = N) the model states do not fit; "
                       "they must be sharded over at least {} GPUs of this type with this micro-batch (or lower "
                       "micro_batch / enable activation_checkpointing to need fewer)",
                       world_size, m.gpus_to_fit);
  return fmt::format("model states are sharded over too few GPUs: at least {} are needed (this cluster has {}); "
                     "shard over more (raise strategy.partition_size, or use zero3 / mics instead of ddp, zero1, zero2)",
                     m.gpus_to_fit, world_size);
}

std::string format_summary(const SimulationResult& r) {
  std::string o;
  auto line = [&o](const std::string& label, const std::string& value) { o += fmt::format("  {:<16}{}\n", label, value); };
  o += fmt::format("micsim simulate: {}  (engine: {})\n", r.scenario, r.engine);
  line("cluster", fmt::format("{} x {} = {} GPUs", r.nodes, r.instance_name, r.world_size));
  line("model", fmt::format("{}: {:.2f} B parameters", r.model_name, r.params / 1e9));
  line("strategy", fmt::format("{}: model states sharded over {} {}, {} replica(s)", r.strategy, r.partition_size,
                               r.parallelism.none() ? "GPUs" : "data-parallel ranks", r.replication_size));
  if (!r.parallelism.none())
    line("parallelism", fmt::format("{} = {} GPUs per model copy, {} data-parallel rank(s){}", describe(r.parallelism),
                                    r.parallelism.model_parallel_size(), r.data_parallel_size,
                                    r.parallelism.pp > 1 ? fmt::format("; pipeline bubble {} per step", human_seconds(r.pipeline_bubble_s)) : ""));
  if (r.framework != "ideal") line("framework", r.framework + " (mechanisms and their sources below)");
  line("batch", fmt::format("{} sequences x {} tokens per step, {} micro-step(s)", r.global_batch, r.seq_len,
                            r.grad_accumulation_steps));
  o += "\n";
  line("step time", fmt::format("{} ({}-{}, 90 %)", human_seconds(r.iteration_time_s), human_seconds(r.iteration_time_s_low),
                                human_seconds(r.iteration_time_s_high)));
  line("throughput", fmt::format("{:.2f} samples/s, {:.0f} tokens/s ({:.0f}-{:.0f} tokens/s, 90 %)", r.samples_per_s, r.tokens_per_s,
                                 r.tokens_per_s_low, r.tokens_per_s_high));
  line("TFLOPS/GPU", fmt::format("{:.1f} model (6N+attention), {:.1f} hardware (with recompute)", r.tflops_per_gpu,
                                 r.hw_tflops_per_gpu));
  line("MFU / HFU", fmt::format("{:.1f} % / {:.1f} % of {:.0f} TFLOPS peak", 100 * r.mfu, 100 * r.hfu, r.peak_tflops_per_gpu));
  const auto& m = r.memory;
  line("memory/GPU", fmt::format("{} peak of {} ({} reserved for runtime): {}", human_bytes(m.peak_bytes),
                                 human_bytes(m.capacity_bytes), human_bytes(m.reserve_bytes),
                                 m.fits ? fmt::format("fits, {} headroom", human_bytes(m.headroom_bytes()))
                                        : fmt::format("DOES NOT FIT, {} over", human_bytes(-m.headroom_bytes()))));
  line("", fmt::format("model states {} (params {}, grads {}, optimizer {})", human_bytes(m.model_states_bytes),
                       human_bytes(m.params_bytes), human_bytes(m.grads_bytes), human_bytes(m.optimizer_bytes)));
  line("", fmt::format("activations {}, buffers {} (gathered params {}, grad buckets {}, optimizer fp32 grads {})",
                       human_bytes(m.activations_bytes), human_bytes(m.buffers_bytes), human_bytes(m.gathered_params_bytes),
                       human_bytes(m.grad_buffer_bytes), human_bytes(m.optimizer_temp_bytes)));
  if (m.allocator_reserved_bytes > m.peak_bytes * (1 + 1e-9))
    line("", fmt::format("caching allocator reserved at its peak {} (the loss frees the 16-bit logits' block, too small for "
                         "its fp32 gradients: torch.cuda.max_memory_reserved, torchtitan's \"memory\")",
                         human_bytes(m.allocator_reserved_bytes)));
  if (!m.fits) line("why", memory_shortfall_text(m, r.world_size));
  double T = r.iteration_time_s > 0 ? r.iteration_time_s : 1;
  line("breakdown", fmt::format("compute {} ({:.0f} %), exposed communication {} ({:.0f} %), idle {} ({:.0f} %)",
                                human_seconds(r.compute_s), 100 * r.compute_s / T, human_seconds(r.exposed_comm_s),
                                100 * r.exposed_comm_s / T, human_seconds(r.idle_s), 100 * r.idle_s / T));
  if (r.price_usd_per_hour)
    line("cost", fmt::format("${:.2f}/h for the cluster, ${:.4f} per step", *r.price_usd_per_hour,
                             *r.price_usd_per_hour * r.iteration_time_s / 3600.0));
  else
    line("cost", "no price in the catalog for this instance");
  if (!r.collectives.empty()) {
    o += "\n  collectives per step\n";
    o += fmt::format("    {:<30}{:<18}{:>6}{:>11}{:>12}{:>11}  {:<16}{}\n", "task", "group", "calls", "size", "each",
                     "total", "algorithm", "bottleneck");
    for (const auto& c : r.collectives) {
      const auto& e = c.estimate;
      o += fmt::format("    {:<30}{:<18}{:>6}{:>11}{:>12}{:>11}  {:<16}{}\n", c.task,
                       fmt::format("{} ({}x{})", c.group.substr(0, c.group.find('_')), e.layout.nodes, e.layout.ranks_per_node),
                       c.calls, human_bytes(e.bytes), human_seconds(e.time_s), human_seconds(c.total_s),
                       fmt::format("{}/{}", to_string(e.algorithm), to_string(e.protocol)), to_string(e.bottleneck));
    }
  }
  o += "\n  sources\n";
  for (const auto& s : r.sources) o += "    - " + s + "\n";
  return o;
}

}  // namespace micsim
