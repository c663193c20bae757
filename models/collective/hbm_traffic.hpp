#pragma once
// What a collective moves through one GPU's own memory (HBM), as NCCL's ring algorithms do: every byte
// received is written there and every byte forwarded or reduced is read from there. That traffic
// competes with the compute kernels overlapped with the collective; the schedule charges it to the
// compute stream (TaskKind::CollectiveMemoryTraffic, docs/model.md sec 2.5).
#include "models/collective/collective.hpp"

namespace micsim {

// Bytes read plus written in this GPU's HBM by one collective of `bytes` (nccl-tests sizes: the whole
// gathered buffer, the whole reduce-scatter input, the all-reduce buffer) over `ranks` ranks.
double collective_hbm_bytes(CollectiveOp op, double bytes, int ranks);

}  // namespace micsim
