#include "sim/analytic/analytic_engine.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace micsim {

namespace {

// A sorted union of busy intervals, built as tasks are placed: this GPU's communication time (which
// slows compute), and each tier's transfer calendar.
class BusyIntervals {
 public:
  void add(double a, double b) {
    if (b <= a) return;
    auto it = std::lower_bound(iv_.begin(), iv_.end(), std::make_pair(a, a));
    if (it != iv_.begin() && std::prev(it)->second >= a) --it;
    while (it != iv_.end() && it->first <= b) {
      a = std::min(a, it->first);
      b = std::max(b, it->second);
      it = iv_.erase(it);
    }
    iv_.insert(it, {a, b});
  }
  // A tier's calendar (the NVLink or the NIC side of a GPU): the union of the time it has been given
  // to transfers at full rate. A new transfer of `work` seconds from `from` takes the free time left
  // (it fills gaps, and waits behind work already placed), so the bytes of collectives on one tier add
  // up whatever order the graph places them in (creation order is not time order: a prefetched gather
  // created after a reduce-scatter may start before it). Returns its end.
  double reserve(double from, double work) {
    if (iv_.empty() || from >= iv_.back().first) {  // at or after the last busy interval: no gap to walk
      if (!iv_.empty() && from <= iv_.back().second) return iv_.back().second += work;
      iv_.emplace_back(from, from + work);
      return from + work;
    }
    double t = from, left = work;
    auto it = std::upper_bound(iv_.begin(), iv_.end(), std::make_pair(from, from));
    if (it != iv_.begin() && std::prev(it)->second > from) --it;
    taken_.clear();  // the gaps taken, added once the walk is done (adding would move `it`)
    for (; it != iv_.end() && left > 0; ++it) {
      if (it->second <= t) continue;
      if (t < it->first) {
        const double gap = std::min(left, it->first - t);
        taken_.emplace_back(t, t + gap);
        left -= gap;
        t += gap;
        if (left <= 0) break;
      }
      t = std::max(t, it->second);
    }
    if (left > 0) taken_.emplace_back(t, t + left), t += left;
    for (const auto& g : taken_) add(g.first, g.second);
    return t;
  }
  // End of a compute task of `work` seconds started at `s`: at full speed outside communication,
  // at (1 - gamma) of it inside.
  double finish(double s, double work, double gamma) const {
    if (gamma <= 0 || iv_.empty()) return s + work;
    double t = s, left = work;
    auto it = std::lower_bound(iv_.begin(), iv_.end(), std::make_pair(s, s));
    if (it != iv_.begin() && std::prev(it)->second > s) --it;
    for (; it != iv_.end(); ++it) {
      if (t < it->first) {
        if (left <= it->first - t) return t + left;
        left -= it->first - t;
        t = it->first;
      }
      double cap = (it->second - t) * (1.0 - gamma);
      if (left <= cap) return t + left / (1.0 - gamma);
      left -= cap;
      t = it->second;
    }
    return t + left;
  }

 private:
  std::vector<std::pair<double, double>> iv_, taken_;
};

}  // namespace

// One placement of the graph. `seen`: the communication intervals that slow compute (a previous pass's);
// without it, those placed so far in this pass. `comm_out`: this pass's communication intervals.
static StepTimeline run_pass(const TaskGraph& g, const OpCosts& costs, double compute_factor, const BusyIntervals* seen,
                             BusyIntervals* comm_out) {
  StepTimeline t;
  t.tasks.resize(g.size());
  double stream_free[kStreamCount] = {};
  // The collective occupying each tier (NVLink, NICs) last, and whether its end may still move: it may
  // until some placed task depends on it.
  struct Occupant {
    int64_t task = -1;
    bool locked = true;   // its end may not move
    bool awaited = true;  // a placed task other than its stream's next one waits for it
  };
  Occupant tier[2][kStreamCount];  // latest collective per tier and per stream
  std::vector<int64_t> stream_last(kStreamCount, -1);
  BusyIntervals comm_busy;
  BusyIntervals calendar[2];  // per tier: intra-node (0), inter-node (1)
  std::vector<std::pair<double, double>> owed;  // where displaced transfers run on after a sharer ended
  auto lock = [&](uint32_t dep, bool awaited) {
    for (auto& per_tier : tier)
      for (auto& o : per_tier)
        if (o.task == int64_t(dep)) o.locked = true, o.awaited = o.awaited || awaited;
  };
  for (size_t i = 0; i < g.size(); ++i) {
    const Task& task = g[i];
    double ready = stream_free[int(task.stream)];
    if (stream_last[int(task.stream)] >= 0) lock(uint32_t(stream_last[int(task.stream)]), false);
    for (uint32_t d = task.deps_begin; d < task.deps_end; ++d) {
      ready = std::max(ready, t.tasks[g.deps[d]].end);
      lock(g.deps[d], true);
    }
    double end;
    if (task.kind == TaskKind::PipelineBubble) {
      end = ready + costs.duration(g, task);  // the GPU waits: nothing to slow down
    } else if (task.stream == StreamId::Compute) {
      end = (seen ? *seen : comm_busy).finish(ready, costs.duration(g, task) * compute_factor, costs.interference);
    } else if (is_compute(task.kind)) {
      end = ready + costs.duration(g, task);  // host work, or a copy on a communication stream
    } else {
      // A collective's transfer takes its bottleneck tier's free time after its latency (no link in
      // use): the calendar, so the bytes of all collectives on a tier add up in any placement order.
      // Where the tier is busy when it starts, it shares it fairly with what runs there, as NCCL kernels
      // on two streams do: each at half speed while both run, so it ends at the earlier of `from + 2 x`
      // and where the tier's work ends. What it displaces depends on the last collective on the other
      // stream:
      //  - no placed task depends on it yet (unlocked): its end moves to where the tier's work ends (or
      //    its rest at half speed), so whatever is placed after it sees the delay;
      //  - only its own stream's next task is placed (locked, not awaited): its end stays (that task
      //    started from it), and the displaced bytes stay owed in the calendar: later transfers wait
      //    for them, the GPU counts as communicating while they run, and the step waits for them;
      //  - a placed task waits for it (awaited, e.g. the compute that consumes a gather): nothing may
      //    slow it any more, so this transfer only gets what the calendar leaves.
      const CommCost& cc = costs.comm[task.op];
      const double lat = std::min(cc.estimate.latency_s, cc.time_s), xfer = cc.time_s - lat;
      const int x = cc.estimate.bottleneck == Tier::Inter ? 1 : 0;
      const int other = task.stream == StreamId::Gather ? int(StreamId::Reduce) : int(StreamId::Gather);
      Occupant& occ = tier[x][other];
      const double from = ready + lat;  // this transfer starts
      const bool on_tier = cc.uses_intra || cc.uses_inter;
      end = on_tier && xfer > 0 ? calendar[x].reserve(from, xfer) : from + xfer;
      const double tier_end = end;
      if (on_tier && xfer > 0 && !occ.awaited) {
        end = std::min(tier_end, from + 2 * xfer);
        // The displaced one runs on until the tier's work ends (where its end moves below, this is the same span).
        if (end < tier_end) comm_busy.add(end, tier_end), owed.emplace_back(end, tier_end);
      }
      if (on_tier && !occ.locked && occ.task >= 0 && t.tasks[occ.task].end > from && xfer > 0) {
        const CommCost& oc = costs.comm[g[occ.task].op];
        const double other_xfer = oc.time_s - std::min(oc.estimate.latency_s, oc.time_s);
        const double rem = std::min(t.tasks[occ.task].end - from, other_xfer);  // the other's transfer left
        double& occ_end = t.tasks[occ.task].end;  // the other: with the tier's work, or its rest at half speed
        occ_end = std::max(occ_end, xfer <= rem ? tier_end : from + 2 * rem);
        comm_busy.add(t.tasks[occ.task].start, occ_end);
      }
      comm_busy.add(ready, end);
      if (on_tier) tier[x][int(task.stream)] = Occupant{int64_t(i), false, false};
    }
    t.tasks[i] = {ready, end};
    stream_free[int(task.stream)] = end;
    stream_last[int(task.stream)] = int64_t(i);
  }
  // A revised end may have moved past its stream's later tasks' start only if they were unlocked;
  // stream times are final here.
  // Work owed on a tier (a locked collective's share given to a newcomer) is communication too, and the
  // step is not over before the tiers have moved every byte.
  summarize_timeline(g, t, owed);
  if (comm_out) *comm_out = std::move(comm_busy);
  return t;
}

StepTimeline run_analytic(const TaskGraph& g, const OpCosts& costs, double compute_factor) {
  // Compute runs slower while this GPU communicates (interference, docs/model.md sec 2.5), but tasks
  // are placed in creation order: a collective created after a compute task yet running during it (a
  // gather prefetched for the next unit, a reduce-scatter of the unit just finished) has not been
  // placed when that compute task is, so a single pass misses its slowdown. The placement is therefore
  // repeated, each compute task stretched by the previous pass's communication intervals, until the step
  // settles: a fixed point where every compute task is slowed by exactly the collectives that overlap it
  // in its own timeline, as the SimGrid engine's pstates slow it (BERT-20B MiCS on 16 p4d under the
  // DeepSpeed-2021 profile: SimGrid +8.1 % over one pass, +1.0 % over the fixed point). A pass that
  // changes the step by less than kSettled ends the loop; kMaxPasses bounds it where placements flip
  // back and forth by a hair.
  constexpr int kMaxPasses = 6;
  constexpr double kSettled = 1e-6;
  BusyIntervals comm;
  StepTimeline t = run_pass(g, costs, compute_factor, nullptr, &comm);
  if (costs.interference <= 0) return t;
  for (int pass = 1; pass < kMaxPasses; ++pass) {
    const BusyIntervals previous = std::move(comm);
    const double before = t.iteration_time_s;
    t = run_pass(g, costs, compute_factor, &previous, &comm);
    if (std::fabs(t.iteration_time_s - before) <= kSettled * std::max(before, 1e-12)) break;
  }
  return t;
}

void summarize_timeline(const TaskGraph& g, StepTimeline& t, const std::vector<std::pair<double, double>>& tiers_busy) {
  std::vector<std::pair<double, double>> compute, comm(tiers_busy);
  double end = 0;
  for (const auto& iv : tiers_busy) end = std::max(end, iv.second);
  for (size_t i = 0; i < g.size(); ++i) {
    const auto& tt = t.tasks[i];
    end = std::max(end, tt.end);
    // Host time is neither compute nor communication (idle unless covered), and a pipeline bubble is idle.
    if (tt.end <= tt.start || g[i].stream == StreamId::Host || g[i].kind == TaskKind::PipelineBubble) continue;
    if (g[i].stream == StreamId::Compute) compute.emplace_back(tt.start, tt.end);
    else comm.emplace_back(tt.start, tt.end);
  }
  t.iteration_time_s = end;
  auto merge = [](std::vector<std::pair<double, double>>& v) {
    std::sort(v.begin(), v.end());
    std::vector<std::pair<double, double>> out;
    for (const auto& iv : v) {
      if (!out.empty() && iv.first <= out.back().second) out.back().second = std::max(out.back().second, iv.second);
      else out.push_back(iv);
    }
    v.swap(out);
  };
  merge(compute);
  merge(comm);
  double busy_compute = 0, comm_total = 0, overlap = 0;
  for (const auto& c : compute) busy_compute += c.second - c.first;
  for (const auto& c : comm) comm_total += c.second - c.first;
  // Overlap of the two sorted, disjoint interval lists.
  size_t a = 0, b = 0;
  while (a < compute.size() && b < comm.size()) {
    double lo = std::max(compute[a].first, comm[b].first), hi = std::min(compute[a].second, comm[b].second);
    if (hi > lo) overlap += hi - lo;
    if (compute[a].second < comm[b].second) ++a; else ++b;
  }
  t.compute_s = busy_compute;
  t.exposed_comm_s = comm_total - overlap;
  t.idle_s = std::max(0.0, end - busy_compute - t.exposed_comm_s);
}

void extrapolate_micro_steps(const TaskGraph& g, StepTimeline& t) {
  const int omitted = g.total_micro_steps - g.micro_steps;
  if (omitted <= 0 || g.micro_steps < 4) return;
  // Each stream's progress per micro-step, between the ends of middle micro-steps 1 and 2. The slowest
  // stream sets the pace: when communication per micro-step outlasts compute (HSDP all-reducing every
  // micro-step), its backlog grows by a period each micro-step and shows at the end of the step.
  double end1[kStreamCount] = {}, end2[kStreamCount] = {}, compute2 = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const Task& task = g[i];
    if (task.kind == TaskKind::Optimizer) continue;
    const int s = int(task.stream);
    if (task.micro_step == 1) end1[s] = std::max(end1[s], t.tasks[i].end);
    if (task.micro_step == 2) {
      end2[s] = std::max(end2[s], t.tasks[i].end);
      if (task.stream == StreamId::Compute) compute2 += t.tasks[i].end - t.tasks[i].start;
    }
  }
  double period = 0;
  for (int s = 0; s < kStreamCount; ++s)
    if (end2[s] > 0 && end1[s] > 0) period = std::max(period, end2[s] - end1[s]);
  const double compute = std::min(compute2, period);
  t.iteration_time_s += omitted * period;
  t.compute_s += omitted * compute;
  t.exposed_comm_s += omitted * (period - compute);
}

}  // namespace micsim
