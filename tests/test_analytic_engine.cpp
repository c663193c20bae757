// The analytic engine on hand-built graphs with known answers.
#include <doctest/doctest.h>

#include "approx.hpp"

#include "sim/analytic/analytic_engine.hpp"

using namespace micsim;

namespace {
struct GraphBuilder {
  TaskGraph g;
  OpCosts costs;
  uint32_t add(TaskKind kind, StreamId s, double dur, std::vector<uint32_t> deps, bool intra = false, bool inter = false) {
    Task t{kind, s, 0, 0, uint32_t(g.deps.size()), 0, 0};
    for (auto d : deps) g.deps.push_back(d);
    t.deps_end = uint32_t(g.deps.size());
    if (is_compute(kind)) {
      t.op = uint32_t(costs.compute_s.size());
      costs.compute_s.push_back(dur);
    } else {
      t.op = uint32_t(costs.comm.size());
      CommCost c;
      c.time_s = dur;
      c.uses_intra = intra;
      c.uses_inter = inter;
      c.estimate.bottleneck = inter ? Tier::Inter : Tier::Intra;
      costs.comm.push_back(c);
      g.comm_ops.push_back({});
    }
    g.tasks.push_back(t);
    return uint32_t(g.tasks.size() - 1);
  }
};
}  // namespace

TEST_CASE("prefetch pipeline: gathers overlap compute, the critical path is closed-form") {
  // n layers; gather g, compute c, gather i+1 may start after compute i-1 (depth 1).
  for (double gtime : {1.0, 3.0}) {
    const double c = 2.0;
    const int n = 5;
    GraphBuilder b;
    std::vector<uint32_t> gathers, computes;
    gathers.push_back(b.add(TaskKind::ParamAllGather, StreamId::Gather, gtime, {}, true));
    gathers.push_back(b.add(TaskKind::ParamAllGather, StreamId::Gather, gtime, {}, true));
    for (int i = 0; i < n; ++i) {
      computes.push_back(b.add(TaskKind::Forward, StreamId::Compute, c, {gathers[i]}));
      if (i + 2 < n) gathers.push_back(b.add(TaskKind::ParamAllGather, StreamId::Gather, gtime, {computes[i]}, true));
    }
    auto t = run_analytic(b.g, b.costs);
    // Compute-bound (g <= c): the first gather, then back-to-back compute: g + n·c.
    // Gather-bound (g > c): gathers run back to back (each waits for a compute that ends earlier),
    // and the last compute follows the last gather: n·g + c.
    const double expected = gtime <= c ? gtime + n * c : n * gtime + c;
    CHECK(t.iteration_time_s == rel_approx(expected));
    CHECK(t.compute_s == rel_approx(n * c));
    CHECK(t.compute_s + t.exposed_comm_s + t.idle_s == rel_approx(t.iteration_time_s));
  }
}

TEST_CASE("collectives on the same tier share it fairly, on different tiers they overlap") {
  GraphBuilder same;
  same.add(TaskKind::ParamAllGather, StreamId::Gather, 1.0, {}, true, false);
  same.add(TaskKind::GradReduceScatter, StreamId::Reduce, 1.0, {}, true, false);
  auto ts = run_analytic(same.g, same.costs);
  CHECK(ts.iteration_time_s == rel_approx(2.0));  // both at half speed: both end at 2
  CHECK(ts.tasks[0].end == rel_approx(2.0));
  CHECK(ts.tasks[1].end == rel_approx(2.0));
  GraphBuilder unequal;  // a short one next to a long one: 2 x 0.5 for the short, the long one delayed by 0.5
  unequal.add(TaskKind::GradReduceScatter, StreamId::Reduce, 3.0, {}, false, true);
  unequal.add(TaskKind::ParamAllGather, StreamId::Gather, 0.5, {}, false, true);
  auto tu = run_analytic(unequal.g, unequal.costs);
  CHECK(tu.tasks[1].end == rel_approx(1.0));
  CHECK(tu.tasks[0].end == rel_approx(3.5));
  GraphBuilder diff;
  diff.add(TaskKind::ParamAllGather, StreamId::Gather, 1.0, {}, true, false);
  diff.add(TaskKind::GradAllReduce, StreamId::Reduce, 1.0, {}, false, true);
  auto t = run_analytic(diff.g, diff.costs);
  CHECK(t.iteration_time_s == rel_approx(1.0));
  CHECK(t.exposed_comm_s == rel_approx(1.0));
  CHECK(t.idle_s == rel_approx(0.0));
}

TEST_CASE("the bytes of every collective on a tier add up, in whatever order the graph places them") {
  // A gather that compute already waits for cannot be slowed any more (its end is locked), so a
  // reduce-scatter next to it gets the NIC only where the gather leaves it: it ends at 1 + 0.5, not at
  // the 2 x 0.5 of sharing (which would move 1.5 s of transfer through the NIC in 1 s).
  GraphBuilder locked;
  const uint32_t ag = locked.add(TaskKind::ParamAllGather, StreamId::Gather, 1.0, {}, false, true);
  locked.add(TaskKind::Forward, StreamId::Compute, 0.1, {ag});
  locked.add(TaskKind::GradReduceScatter, StreamId::Reduce, 0.5, {}, false, true);
  auto tl = run_analytic(locked.g, locked.costs);
  CHECK(tl.tasks[0].end == rel_approx(1.0));
  CHECK(tl.tasks[2].end == rel_approx(1.5));

  // Three collectives on one tier, created out of time order: a reduce-scatter and an all-reduce on
  // the reduce stream (compute waits for the all-reduce), then a gather that starts at 0, before
  // both end. Sharing with the all-reduce alone (the last one on the other stream, as if the tier
  // were free before it) let the gather end at 1 and the step at 2: 2.5 s of transfer in 2 s.
  GraphBuilder three;
  three.add(TaskKind::GradReduceScatter, StreamId::Reduce, 1.0, {}, false, true);
  const uint32_t ar = three.add(TaskKind::GradAllReduce, StreamId::Reduce, 1.0, {}, false, true);
  three.add(TaskKind::Optimizer, StreamId::Compute, 0.0, {ar});
  three.add(TaskKind::ParamAllGather, StreamId::Gather, 0.5, {}, false, true);
  auto t3 = run_analytic(three.g, three.costs);
  CHECK(t3.tasks[1].end == rel_approx(2.0));
  CHECK(t3.tasks[3].end == rel_approx(2.5));
  CHECK(t3.iteration_time_s == rel_approx(2.5));

  // A reduce-scatter whose only placed successor is its own stream's next task (a bucket copy) is not
  // waited for by anything else: a gather starting next to it shares the NIC (2 x 0.5, as in SimGrid),
  // the reduce-scatter's displaced 0.5 s stays owed on the NIC, and the step waits for it.
  GraphBuilder owed;
  owed.add(TaskKind::GradReduceScatter, StreamId::Reduce, 1.0, {}, false, true);
  owed.add(TaskKind::GradBucketCopy, StreamId::Reduce, 0.0, {});
  owed.add(TaskKind::ParamAllGather, StreamId::Gather, 0.5, {}, false, true);
  auto to = run_analytic(owed.g, owed.costs);
  CHECK(to.tasks[2].end == rel_approx(1.0));       // shared: 2 x 0.5 (until 2026-12-06 it waited: 1.5)
  CHECK(to.tasks[0].end == rel_approx(1.0));       // its end was fixed when the copy was placed
  CHECK(to.iteration_time_s == rel_approx(1.5));   // 1.5 s of transfer on the NIC, not 1
  CHECK(to.exposed_comm_s == rel_approx(1.5));

  // Collectives on different tiers still overlap (each tier keeps its own calendar).
  GraphBuilder tiers;
  tiers.add(TaskKind::GradReduceScatter, StreamId::Reduce, 1.0, {}, false, true);
  tiers.add(TaskKind::GradAllReduce, StreamId::Reduce, 1.0, {}, false, true);
  tiers.add(TaskKind::ParamAllGather, StreamId::Gather, 1.5, {}, true, false);
  CHECK(run_analytic(tiers.g, tiers.costs).iteration_time_s == rel_approx(2.0));
}

TEST_CASE("interference slows a compute task by the collectives that overlap it, whichever the graph creates first") {
  // Compute of 4 s and a 2-s gather on another stream, both ready at 0, interference 0.25: the compute
  // does 2 x 0.75 = 1.5 s of its work while the gather runs and the other 2.5 s after it: it ends at 4.5 s.
  // A single pass in creation order missed a gather created after the compute (it ended at 4 s);
  // run_analytic repeats the placement until the slowdown settles, so both orders give 4.5 s.
  for (bool compute_first : {true, false}) {
    CAPTURE(compute_first);
    GraphBuilder b;
    b.costs.interference = 0.25;
    if (compute_first) {
      b.add(TaskKind::Forward, StreamId::Compute, 4.0, {});
      b.add(TaskKind::ParamAllGather, StreamId::Gather, 2.0, {}, true);
    } else {
      b.add(TaskKind::ParamAllGather, StreamId::Gather, 2.0, {}, true);
      b.add(TaskKind::Forward, StreamId::Compute, 4.0, {});
    }
    const auto t = run_analytic(b.g, b.costs);
    CHECK(t.iteration_time_s == rel_approx(4.5));
    CHECK(t.compute_s == rel_approx(4.5));
  }
}
