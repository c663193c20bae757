#include "models/workload/parallelism.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace micsim {

const char* to_string(PipelineSchedule s) {
  switch (s) {
    case PipelineSchedule::OneFOneB: return "1f1b";
    case PipelineSchedule::Interleaved: return "interleaved";
    case PipelineSchedule::GPipe: return "gpipe";
  }
  return "?";
}

double ModelParallelism::in_flight_micro_batches(int64_t m, int stage) const {
  if (pp <= 1) return 1.0;
  const int s = std::clamp(stage, 0, pp - 1), v = virtual_stages;
  double n = pp - s;
  if (schedule == PipelineSchedule::GPipe) n = double(m);
  else if (schedule == PipelineSchedule::Interleaved && v > 1) n = (2.0 * (pp - s - 1) + double(v - 1) * pp + 1.0) / v;
  return std::min(n, double(std::max<int64_t>(1, m)));
}

std::vector<int> ModelParallelism::stage_layer_indices(int layers, int stage) const {
  std::vector<int> out;
  if (pp <= 1) {
    for (int l = 0; l < layers; ++l) out.push_back(l);
    return out;
  }
  const int chunks = pp * virtual_stages, base = layers / chunks;
  int extra = layers % chunks, first = 0;
  for (int c = 0; c < chunks; ++c) {
    int size = base;
    if (c == chunks - 1) size = layers - first;
    else if (c > 0 && extra > 0) ++size, --extra;
    if (c % pp == stage)
      for (int l = first; l < first + size; ++l) out.push_back(l);
    first += size;
  }
  return out;
}

int ModelParallelism::stage_layers(int layers) const {
  if (pp <= 1) return layers;
  size_t most = 0;
  for (int s = 0; s < pp; ++s) most = std::max(most, stage_layer_indices(layers, s).size());
  return int(most);
}

std::string describe(const ModelParallelism& mp) {
  std::string pp = fmt::format("pp {}", mp.pp);
  if (mp.pp > 1) pp += mp.virtual_stages > 1 ? fmt::format(" ({}, v {})", to_string(mp.schedule), mp.virtual_stages)
                                             : fmt::format(" ({})", to_string(mp.schedule));
  return fmt::format("tp {} x {} x cp {}{}", mp.tp, pp, mp.cp, mp.tp > 1 && mp.sequence_parallel ? ", sequence parallel" : "");
}

}  // namespace micsim
