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

double ModelParallelism::in_flight_micro_batches(int64_t m) const {
  if (pp <= 1) return 1.0;
  double n = pp;
  if (schedule == PipelineSchedule::GPipe) n = double(m);
  else if (schedule == PipelineSchedule::Interleaved && virtual_stages > 1) n = pp * (1.0 + double(pp - 1) / double(pp * virtual_stages));
  return std::min(n, double(std::max<int64_t>(1, m)));
}

std::string describe(const ModelParallelism& mp) {
  std::string pp = fmt::format("pp {}", mp.pp);
  if (mp.pp > 1) pp += mp.virtual_stages > 1 ? fmt::format(" ({}, v {})", to_string(mp.schedule), mp.virtual_stages)
                                             : fmt::format(" ({})", to_string(mp.schedule));
  return fmt::format("tp {} x {} x cp {}{}", mp.tp, pp, mp.cp, mp.tp > 1 && mp.sequence_parallel ? ", sequence parallel" : "");
}

}  // namespace micsim
