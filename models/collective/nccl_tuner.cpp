#include "models/collective/nccl_tuner.hpp"

#include <cmath>

#include "models/collective/collective.hpp"
#include "models/hardware/catalog.hpp"
#include "models/io/yaml_node.hpp"

namespace micsim {

// Distance-free edge test: the point lies on segment a-b (relative tolerance, the plane spans 1e11 bytes).
static bool on_segment(double x, double y, std::pair<double, double> a, std::pair<double, double> b) {
  const double cross = (b.first - a.first) * (y - a.second) - (b.second - a.second) * (x - a.first);
  const double len = std::hypot(b.first - a.first, b.second - a.second);
  if (len == 0) return x == a.first && y == a.second;
  if (std::fabs(cross) / len > 1e-6 * std::max(1.0, std::fabs(y))) return false;
  return x >= std::min(a.first, b.first) && x <= std::max(a.first, b.first) &&
         y >= std::min(a.second, b.second) && y <= std::max(a.second, b.second);
}

bool TunerRegion::contains(double x, double y) const {
  const size_t n = vertices.size();
  for (size_t i = 0; i < n; ++i)
    if (on_segment(x, y, vertices[i], vertices[(i + 1) % n])) return true;
  // Even-odd rule with a ray towards +x.
  bool inside = false;
  for (size_t i = 0, j = n - 1; i < n; j = i++) {
    const auto& [xi, yi] = vertices[i];
    const auto& [xj, yj] = vertices[j];
    if ((yi > y) != (yj > y) && x < xj + (y - yj) * (xi - xj) / (yi - yj)) inside = !inside;
  }
  return inside;
}

std::vector<const TunerRegion*> NcclTuner::matches(CollectiveOp op, double bytes, int ranks, int nodes) const {
  std::vector<const TunerRegion*> out;
  if (nodes < min_nodes || ranks != ranks_per_node * nodes) return out;
  auto it = regions.find(op);
  if (it == regions.end()) return out;
  for (const auto& r : it->second)
    if (r.contains(bytes, ranks)) out.push_back(&r);
  return out;
}

NcclTuner NcclTuner::parse(const YamlNode& n, const std::string& name) {
  n.check_keys({"ranks_per_node", "min_nodes", "source", "all_reduce", "all_gather", "reduce_scatter"});
  NcclTuner t;
  t.name = name;
  t.ranks_per_node = int(n.at("ranks_per_node").as_int_in(1, 1024));
  t.min_nodes = int(n.at("min_nodes").as_int_in(1, 1 << 20));
  t.source = n.at("source").as_string();
  for (auto op : {CollectiveOp::AllReduce, CollectiveOp::AllGather, CollectiveOp::ReduceScatter}) {
    auto list = n.get(to_string(op));
    if (!list) continue;
    for (const auto& e : list->items()) {
      e.check_keys({"algorithm", "protocol", "vertices"});
      TunerRegion r;
      r.algorithm = *parse_nccl_algorithm(e.at("algorithm").as_choice({"ring", "tree", "nvls", "nvls_tree"}));
      r.protocol = *parse_protocol(e.at("protocol").as_choice({"LL", "LL128", "Simple"}));
      YamlNode vs = e.at("vertices");
      for (const auto& v : vs.items()) {
        auto xy = v.items();
        if (xy.size() != 2) v.fail("expected a vertex [bytes, ranks]");
        r.vertices.emplace_back(xy[0].as_double_in(0, 1e15), xy[1].as_double_in(0, 1e9));
      }
      if (r.vertices.size() < 2) vs.fail("expected at least 2 vertices");
      t.regions[op].push_back(std::move(r));
    }
  }
  return t;
}

static const std::vector<NcclTuner>& builtin_tuners() {
  static const std::vector<NcclTuner> tuners = [] {
    std::vector<NcclTuner> out;
    YamlNode root = load_embedded_catalog("models/catalog/nccl_tuners.yaml");
    root.check_keys({"tuners"});
    YamlNode t = root.at("tuners");
    t.require_map();
    for (const auto& name : t.keys()) out.push_back(NcclTuner::parse(t.at(name), name));
    return out;
  }();
  return tuners;
}

const NcclTuner* find_nccl_tuner(const std::string& name) {
  for (const auto& t : builtin_tuners())
    if (t.name == name) return &t;
  return nullptr;
}

std::vector<std::string> nccl_tuner_names() {
  std::vector<std::string> out;
  for (const auto& t : builtin_tuners()) out.push_back(t.name);
  return out;
}

}  // namespace micsim
