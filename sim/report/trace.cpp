#include "sim/report/trace.hpp"

#include <fmt/format.h>

namespace micsim {

static std::string unit_name(const Workload& w, int u) {
  if (u < 0) return "";
  switch (w.units[u].kind) {
    case UnitKind::Embedding: return "embedding";
    case UnitKind::Head: return "head";
    case UnitKind::Block: return fmt::format("layer {}", u - 1);
  }
  return "";
}

std::string chrome_trace(const PreparedSimulation& p, const std::vector<TracedNode>& nodes, const std::string& engine) {
  const TaskGraph& g = p.graph;
  std::string out;
  out.reserve(256 * g.size() * nodes.size() + 4096);
  out += "{\"displayTimeUnit\":\"ms\",\"otherData\":{";
  out += fmt::format("\"scenario\":\"{}\",\"engine\":\"{}\",\"world_size\":{}", p.scenario.name, engine, p.layout.world);
  if (g.total_micro_steps > g.micro_steps)
    out += fmt::format(",\"note\":\"micro-steps 3..{} are identical to micro-step 2 and not drawn; the step time includes them\"",
                       g.total_micro_steps - 2);
  out += "},\"traceEvents\":[\n";
  bool has_host = false;  // the host timeline exists only under a framework profile with host costs
  for (const auto& t : g.tasks) has_host |= t.stream == StreamId::Host;
  bool first = true;
  auto emit = [&](const std::string& ev) {
    if (!first) out += ",\n";
    first = false;
    out += ev;
  };
  for (const auto& tn : nodes) {
    const int g_per_node = p.layout.gpus_per_node;
    emit(fmt::format(R"({{"ph":"M","name":"process_name","pid":{},"args":{{"name":"node {} (GPUs {}-{}){}"}}}})", tn.node, tn.node,
                     tn.node * g_per_node, tn.node * g_per_node + g_per_node - 1, engine == "analytic" ? ", representative GPU" : ""));
    emit(fmt::format(R"({{"ph":"M","name":"process_sort_index","pid":{},"args":{{"sort_index":{}}}}})", tn.node, tn.node));
    for (int s = 0; s < kStreamCount; ++s)
      if (s != int(StreamId::Host) || has_host)
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
      }
      emit(fmt::format(R"({{"ph":"X","name":"{}","cat":"{}","pid":{},"tid":{},"ts":{:.3f},"dur":{:.3f},"args":{{{}}}}})", name,
                       is_compute(t.kind) ? "compute" : "collective", tn.node, int(t.stream), tt.start * 1e6,
                       (tt.end - tt.start) * 1e6, args));
    }
  }
  out += "\n]}\n";
  return out;
}

}  // namespace micsim
