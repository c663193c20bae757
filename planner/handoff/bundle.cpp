// All hand-offs of one configuration, and HANDOFF.md: what micsim predicted, how to launch each file,
// and every place where a framework cannot express what was simulated.
#include <fmt/format.h>

#include "planner/handoff/handoff.hpp"
#include "models/io/json_text.hpp"
#include "sim/simulation.hpp"

namespace micsim {

std::vector<HandoffFile> all_handoffs(const Scenario& sc, const SimulationResult& r) {
  std::vector<HandoffFile> files;
  std::vector<std::string> notes;
  DeepSpeedHandoff ds = deepspeed_handoff(sc);
  for (const auto& n : ds.notes) notes.push_back("DeepSpeed: " + n);
  if (ds.config) files.push_back({"ds_config.json", json_text(*ds.config)});
  files.push_back({"train_fsdp2.py", fsdp2_script(sc, &r)});
  files.push_back({"torchtitan.toml", torchtitan_toml(sc, &notes)});
  files.push_back({"accelerate.yaml", accelerate_yaml(sc, &notes)});
  const bool model_parallel = !sc.parallelism.none();
  if (model_parallel) {
    files.push_back({"megatron_args.sh", megatron_args(sc, &notes)});
    notes.push_back(fmt::format("DeepSpeed, FSDP2 (train_fsdp2.py) and accelerate: written for the data-parallel dimension only; the "
                                "simulated {} is in megatron_args.sh and torchtitan.toml", describe(sc.parallelism)));
  }

  const ParallelLayout l = make_layout(sc.strategy, sc.cluster.nodes, sc.cluster.instance.gpus_per_node, sc.parallelism);
  std::string md;
  md += fmt::format("# Hand-off: {} on {} x {} ({} GPUs)\n\n", sc.model.name, sc.cluster.nodes, sc.cluster.instance.name, l.world);
  md += fmt::format("Written by micsim {}. Strategy {} (partition group {}, replication group {}{}), micro-batch {}, {} "
                    "accumulation steps (global batch {}), sequence {}, {}, activation checkpointing {}.\n\n",
                    MICSIM_VERSION, to_string(sc.strategy.kind), l.partition_size, l.replication_size,
                    l.hierarchical ? ", hierarchical all-gather" : "", sc.training.micro_batch, sc.grad_accumulation_steps(),
                    sc.training.global_batch, sc.training.seq_len, to_string(sc.training.precision),
                    to_string(sc.training.checkpointing));
  md += fmt::format("micsim predicted (engine {}, framework {}): {:.3f} s per step, {:.0f} tokens/s (90 % interval {:.0f}-{:.0f}; "
                    "{}), {:.1f} % MFU, peak memory {:.1f} GiB of {:.0f} GiB per GPU.\n\n",
                    r.engine, r.framework, r.iteration_time_s, r.tokens_per_s, r.tokens_per_s_low, r.tokens_per_s_high,
                    r.interval_source, 100 * r.mfu, r.memory.peak_bytes / double(1 << 30), r.memory.capacity_bytes / double(1 << 30));
  md += "| file | for | launch |\n|---|---|---|\n";
  if (ds.config)
    md += fmt::format("| ds_config.json | DeepSpeed {} | `deepspeed --hostfile hosts train.py --deepspeed_config ds_config.json` |\n",
                      kHandoffDeepSpeed);
  md += fmt::format("| train_fsdp2.py | PyTorch >= {} FSDP2 | `torchrun --nnodes {} --nproc-per-node {} --rdzv-backend c10d "
                    "--rdzv-endpoint HOST:29500 train_fsdp2.py` (CPU check: `torchrun --nproc-per-node 2 train_fsdp2.py --tiny --steps 2`) |\n",
                    kHandoffTorch, sc.cluster.nodes, sc.cluster.instance.gpus_per_node);
  md += fmt::format("| torchtitan.toml | torchtitan {} | `torchrun ... -m torchtitan.train --job.config_file torchtitan.toml` |\n",
                    kHandoffTorchtitan);
  md += fmt::format("| accelerate.yaml | accelerate {} | `accelerate launch --config_file accelerate.yaml --machine_rank RANK train.py` |\n",
                    kHandoffAccelerate);
  if (model_parallel)
    md += "| megatron_args.sh | Megatron-LM (core_r0.x argument names) | `source megatron_args.sh; torchrun ... pretrain_gpt.py \"${MEGATRON_ARGS[@]}\" ...` |\n";
  md += "\n";
  md += "## What the files cannot express, and what else to do\n\n";
  if (notes.empty()) md += "Nothing: each file encodes the simulated strategy.\n";
  for (const auto& n : notes) md += "- " + n + "\n";
  md += "\nMeasure a few steps and compare with the prediction; `micsim calibrate` turns nccl-tests logs and the "
        "harness's measurements into a calibration file for this cluster.\n";
  files.push_back({"HANDOFF.md", md});
  return files;
}

}  // namespace micsim
