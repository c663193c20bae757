#include "sim/report/trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace micsim {

static std::string unit_name(const Workload& w, int u) {
  if (u < 0) return "";
  switch (w.units[u].kind) {
    case UnitKind::Embedding: return "embedding";
    case UnitKind::Head: return "head";
    case UnitKind::Block: return fmt::format("layer {}", w.units[u].layer);
  }
  return "";
}

// Nanoseconds as microseconds with exactly three decimals.
static std::string exact_us(int64_t ns) { return fmt::format("{}.{:03d}", ns / 1000, int(ns % 1000)); }

std::string chrome_trace(const PreparedSimulation& p, const std::vector<TracedNode>& nodes, const std::string& engine) {
  const TaskGraph& g = p.graph;
  std::string out;
  out.reserve(256 * g.size() * nodes.size() + 4096);
  out += "{\"displayTimeUnit\":\"ms\",\"otherData\":{";
  out += fmt::format("\"scenario\":\"{}\",\"engine\":\"{}\",\"world_size\":{}", p.scenario.name, engine, p.layout.world);
  if (g.total_micro_steps > g.micro_steps)
    out += fmt::format(",\"note\":\"micro-steps {}..{} are identical to micro-step 2 and not drawn (a slice marks them); the step time includes them\"",
                       g.micro_steps - 1, g.total_micro_steps - 2);
  out += "},\"traceEvents\":[\n";
  bool has_host = false;  // the host timeline exists only under a framework profile with host costs
  bool has_mp = false;    // the model-parallel stream only with tp, cp or pp > 1
  for (const auto& t : g.tasks) has_host |= t.stream == StreamId::Host, has_mp |= t.stream == StreamId::ModelParallel;
  bool first = true;
  auto emit = [&](const std::string& ev) {
    if (!first) out += ",\n";
    first = false;
    out += ev;
  };
  for (const auto& tn : nodes) {
    const int g_per_node = p.layout.gpus_per_node;
    // With pipeline parallelism: which stage the node's GPUs hold (the simulated step is the last stage's).
    std::string stage;
    const ModelParallelism& mp = p.layout.mp;
    if (mp.pp > 1) {
      const int per_stage = mp.tp * p.layout.dp;  // dp counts data x context parallel ranks
      stage = engine == "analytic" ? fmt::format(", pipeline stage {} of {} (the last: it sets the pace)", mp.pp - 1, mp.pp)
                                   : fmt::format(", pipeline stage {} of {}", tn.node * g_per_node / per_stage, mp.pp);
    }
    emit(fmt::format(R"({{"ph":"M","name":"process_name","pid":{},"args":{{"name":"node {} (GPUs {}-{}){}{}"}}}})", tn.node, tn.node,
                     tn.node * g_per_node, tn.node * g_per_node + g_per_node - 1, engine == "analytic" ? ", representative GPU" : "", stage));
    emit(fmt::format(R"({{"ph":"M","name":"process_sort_index","pid":{},"args":{{"sort_index":{}}}}})", tn.node, tn.node));
    for (int s = 0; s < kStreamCount; ++s)
      if ((s != int(StreamId::Host) || has_host) && (s != int(StreamId::ModelParallel) || has_mp))
        emit(fmt::format(R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":"{} stream"}}}})", tn.node, s,
                       to_string(StreamId(s))));
    for (size_t i = 0; i < g.size(); ++i) {
      const Task& t = g[i];
      const TaskTiming& tt = tn.timeline->tasks[i];
      std::string name = to_string(t.kind);
      std::string unit = unit_name(p.workload, t.unit);
      if (!unit.empty()) name += " " + unit;
      const int micro = t.micro_step == g.micro_steps - 1 ? g.total_micro_steps - 1 : t.micro_step;
      std::string args = fmt::format(R"("micro_step":{})", micro);
      if (!unit.empty()) args += fmt::format(R"(,"unit":"{}")", unit);
      if (!is_compute(t.kind)) {
        const CommOp& op = g.comm_ops[t.op];
        const CollectiveEstimate& e = p.costs.comm[t.op].estimate;
        args += fmt::format(R"(,"op":"{}","group":"{}","ranks":{},"nodes":{},"bytes":{:.0f},"algorithm":"{}","protocol":"{}","modelled_s":{:.9g})",
                            to_string(op.op), to_string(op.group), e.layout.ranks, e.layout.nodes, op.bytes,
                            to_string(e.algorithm), to_string(e.protocol), e.time_s);
      } else if (t.kind == TaskKind::Optimizer) {
        args += fmt::format(R"(,"local_params":{})", g.compute_ops[t.op].params);
      } else if (t.kind == TaskKind::CollectiveMemoryTraffic) {
        args += fmt::format(R"(,"hbm_bytes":{})", g.compute_ops[t.op].params);  // of the collectives issued since the last pass
      }
      // Times as integer nanoseconds, printed exactly in microseconds: a slice never overlaps the next.
      const int64_t start_ns = std::llround(tt.start * 1e9), end_ns = std::max(start_ns, int64_t(std::llround(tt.end * 1e9)));
      emit(fmt::format(R"({{"ph":"X","name":"{}","cat":"{}","pid":{},"tid":{},"ts":{},"dur":{},"args":{{{}}}}})", name,
                       is_compute(t.kind) ? "compute" : t.stream == StreamId::Host ? "host" : "collective", tn.node, int(t.stream),
                       exact_us(start_ns), exact_us(end_ns - start_ns), args));
    }
    // Micro-steps not drawn (identical to micro-step 2; counted in the step time) are named in the trace itself.
    if (g.total_micro_steps > g.micro_steps) {
      int64_t at = 0;
      for (size_t i = 0; i < g.size(); ++i)
        if (g[i].micro_step == g.micro_steps - 2) at = std::max(at, int64_t(std::llround(tn.timeline->tasks[i].end * 1e9)));
      emit(fmt::format(R"j({{"ph":"X","name":"micro-steps {}..{} elided (identical to micro-step 2)","cat":"elided","pid":{},"tid":0,"ts":{},"dur":0,"args":{{"elided_micro_steps":{}}}}})j",
                       g.micro_steps - 1, g.total_micro_steps - 2, tn.node, exact_us(at), g.total_micro_steps - g.micro_steps));
    }
  }
  out += "\n]}\n";
  return out;
}

}  // namespace micsim
