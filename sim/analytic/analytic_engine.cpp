#include "sim/analytic/analytic_engine.hpp"

#include <algorithm>

namespace micsim {

StepTimeline run_analytic(const TaskGraph& g, const OpCosts& costs) {
  StepTimeline t;
  t.tasks.resize(g.size());
  double stream_free[kStreamCount] = {0, 0, 0};
  double intra_free = 0, inter_free = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const Task& task = g[i];
    double ready = stream_free[int(task.stream)];
    for (uint32_t d = task.deps_begin; d < task.deps_end; ++d) ready = std::max(ready, t.tasks[g.deps[d]].end);
    const bool comm = !is_compute(task.kind);
    const CommCost* cc = comm ? &costs.comm[task.op] : nullptr;
    if (cc) {
      if (cc->uses_intra) ready = std::max(ready, intra_free);
      if (cc->uses_inter) ready = std::max(ready, inter_free);
    }
    const double end = ready + costs.duration(g, task);
    t.tasks[i] = {ready, end};
    stream_free[int(task.stream)] = end;
    if (cc) {
      if (cc->uses_intra) intra_free = end;
      if (cc->uses_inter) inter_free = end;
    }
  }
  summarize_timeline(g, t);
  return t;
}

void summarize_timeline(const TaskGraph& g, StepTimeline& t) {
  std::vector<std::pair<double, double>> compute, comm;
  double end = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const auto& tt = t.tasks[i];
    end = std::max(end, tt.end);
    if (tt.end <= tt.start) continue;
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

}  // namespace micsim
