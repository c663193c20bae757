#pragma once
// Model parallelism: how one copy of the model is split over GPUs before the data-parallel strategy
// (sim/strategy) shards or replicates what each rank holds.
//   tp  tensor parallelism (Megatron column/row-parallel GEMMs, Shoeybi et al. 2019): a block's GEMMs
//       and attention heads split over tp GPUs; activations all-reduced twice per block and pass, or,
//       with sequence parallelism (Korthikanti et al. 2022, arXiv 2205.05198), all-gathered and
//       reduce-scattered, with norms and dropout split along the sequence;
//   cp  context parallelism (ring attention): the sequence split over cp GPUs, keys and values passed
//       around the ring while attention computes;
//   pp  pipeline parallelism (Narayanan et al. 2021, arXiv 2104.04473): layers split into pp stages,
//       each with virtual_stages chunks (interleaved 1F1B), micro-batches passed stage to stage.
// Ranks are ordered as Megatron-LM orders them: tp fastest, then cp, then dp, then pp. With every
// degree 1 nothing here changes a result.
#include <cstdint>
#include <string>
#include <vector>

namespace micsim {

enum class PipelineSchedule { OneFOneB, Interleaved, GPipe };
const char* to_string(PipelineSchedule s);

struct ModelParallelism {
  int tp = 1, pp = 1, cp = 1;
  int virtual_stages = 1;                      // model chunks per pipeline stage (interleaved schedule)
  PipelineSchedule schedule = PipelineSchedule::OneFOneB;
  bool sequence_parallel = false;              // default true when tp > 1 (set by the scenario loader)
  bool tp_comm_overlap = false;                // forward TP collectives overlapped with the GEMMs too (Megatron
                                               // --tp-comm-overlap, torchtitan async TP)
  bool tp_backward_overlap = true;             // backward input-gradient all-reduces / reduce-scatters overlap the
                                               // weight-gradient GEMMs (Megatron-LM since 2021-08-30); false: they block

  int model_parallel_size() const { return tp * pp * cp; }
  bool none() const { return tp == 1 && pp == 1 && cp == 1; }
  // The blocks of pipeline stage `stage` (0 = first, pp - 1 = last), in model order: the L blocks are cut
  // into pp·v contiguous chunks and chunk c runs on stage c mod pp. A chunk has floor(L / (pp·v)) blocks,
  // the middle ones one more while the remainder lasts, the last one the rest (torchtitan
  // generate_split_points; all equal when pp·v divides L, as Megatron-LM requires). All L without pipelining.
  std::vector<int> stage_layer_indices(int layers, int stage) const;
  // Blocks on the fullest stage.
  int stage_layers(int layers) const;

  // Micro-batches whose activations the first stage holds at its peak: GPipe all m of them; 1F1B pp;
  // interleaved pp·(1 + (pp-1)/(pp·v)) (Korthikanti et al. 2022, §4.2.3), never more than m.
  // Stage s of a 1F1B pipeline holds pp - s (its warm-up forwards plus one); interleaved, in whole-stage
  // micro-batches, ((pp - s - 1)·2 + (v - 1)·pp + 1) / v chunks' worth (Megatron-LM's warm-up count of the
  // interleaved schedule; for s = 0 it is the formula above).
  double in_flight_micro_batches(int64_t micro_batches, int stage = 0) const;
};

// "tp 8 x pp 4 (interleaved, v 3) x cp 1, sequence parallel"
std::string describe(const ModelParallelism& mp);

}  // namespace micsim
