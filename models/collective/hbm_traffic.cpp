#include "models/collective/hbm_traffic.hpp"

namespace micsim {

double collective_hbm_bytes(CollectiveOp op, double bytes, int ranks) {
  if (ranks <= 1 || bytes <= 0) return 0.0;
  const double n = ranks, arriving = (n - 1) / n * bytes;  // what reaches this rank over the ring
  switch (op) {
    // Each of the n-1 chunks that arrive is written to the output and, but the last, read to forward.
    case CollectiveOp::AllGather: return arriving + (n - 2) / n * bytes;
    // The rank reads its whole input once, and reads then writes each partial sum that arrives.
    case CollectiveOp::ReduceScatter: return bytes + 2 * arriving;
    // A reduce-scatter, then an all-gather of the reduced chunks.
    case CollectiveOp::AllReduce: return bytes + 2 * arriving + arriving + (n - 2) / n * bytes;
    // Pipelined along the ring: every rank but the root writes the buffer and reads it to forward.
    case CollectiveOp::Broadcast: return 2 * bytes;
    // Pipelined along the ring to the root: read the input and the arriving partial, write the sum.
    case CollectiveOp::Reduce: return 3 * bytes;
  }
  return 0.0;
}

}  // namespace micsim
