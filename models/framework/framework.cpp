#include "models/framework/framework.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "models/hardware/catalog.hpp"
#include "models/io/yaml_node.hpp"

namespace micsim {

namespace {

Granularity parse_granularity(const YamlNode& n) {
  const std::string g = n.as_choice({"unit", "tensor", "bucket"});
  return g == "unit" ? Granularity::Unit : g == "tensor" ? Granularity::Tensor : Granularity::Bucket;
}

FrameworkProfile parse_profile(const std::string& name, const YamlNode& n) {
  n.check_keys({"description", "versions", "kinds", "gather", "reduce", "step", "recompute", "optimizer", "host", "sources"});
  FrameworkProfile p;
  p.name = name;
  p.family = name.rfind("deepspeed", 0) == 0 ? "deepspeed" : name;
  p.description = n.at("description").as_string();
  auto versions = n.at("versions").items();
  if (versions.size() != 2) n.at("versions").fail("expected [FIRST, LAST]");
  p.first_version = versions[0].is_null() ? "" : versions[0].as_string();
  p.last_version = versions[1].is_null() ? "" : versions[1].as_string();
  if (auto k = n.get("kinds"))
    for (const auto& item : k->items()) p.kinds.push_back(item.as_string());
  YamlNode g = n.at("gather");
  g.check_keys({"granularity", "persistence_threshold", "prefetch_units", "prefetch_tensors", "device_sync", "sync_per_collective",
                "max_inflight", "keep_across_turn", "copy_out", "list_form"});
  p.gather = parse_granularity(g.at("granularity"));
  p.persistence_threshold = g.at("persistence_threshold").as_double_in(0, 1e12);
  p.prefetch_units = int(g.at("prefetch_units").as_int_in(-1, 64));
  p.prefetch_tensors = int(g.at("prefetch_tensors").as_int_in(0, 64));
  p.device_sync = g.at("device_sync").as_bool();
  p.sync_per_collective = g.at("sync_per_collective").as_bool();
  p.max_inflight = int(g.at("max_inflight").as_int_in(0, 64));
  p.keep_across_turn = g.at("keep_across_turn").as_bool();
  p.copy_out = g.at("copy_out").as_double_in(0, 4);
  if (auto v = g.get("list_form")) p.gather_list_form = v->as_bool();
  YamlNode r = n.at("reduce");
  r.check_keys({"granularity", "bucket_host_wait", "bucket_copy", "hsdp_allreduce_every_microstep", "collective", "list_form"});
  p.reduce = parse_granularity(r.at("granularity"));
  p.bucket_host_wait = r.at("bucket_host_wait").as_bool();
  p.bucket_copy = r.at("bucket_copy").as_double_in(0, 4);
  p.hsdp_allreduce_every_microstep = r.at("hsdp_allreduce_every_microstep").as_bool();
  if (auto v = r.get("list_form")) p.reduce_list_form = v->as_bool();
  if (auto c = r.get("collective")) p.grad_all_reduce = c->as_choice({"reduce_scatter", "all_reduce"}) == "all_reduce";
  if (auto st = n.get("step")) {
    st->check_keys({"param_sync"});
    const std::string sync = st->at("param_sync").as_choice({"all_gather", "broadcast_per_rank", "regather_in_forward"});
    p.param_broadcast_per_rank = sync == "broadcast_per_rank";
    p.params_regathered_in_forward = sync == "regather_in_forward";
  }
  if (auto rc = n.get("recompute")) {
    rc->check_keys({"early_stop"});
    p.recompute_early_stop = rc->at("early_stop").as_bool();
  }
  if (auto o = n.get("optimizer")) {
    o->check_keys({"implementation"});
    p.optimizer_implementation =
        o->at("implementation").as_choice({"fused", "foreach"}) == "foreach" ? OptimizerImplementation::Foreach : OptimizerImplementation::Fused;
  }
  YamlNode h = n.at("host");
  h.check_keys({"per_unit_us", "per_collective_us"});
  p.host_per_unit_s = h.at("per_unit_us").as_double_in(0, 1e6) * 1e-6;
  p.host_per_collective_s = h.at("per_collective_us").as_double_in(0, 1e6) * 1e-6;
  YamlNode s = n.at("sources");
  for (const auto& k : s.keys()) p.sources[k] = s.at(k).as_string();
  return p;
}

const std::vector<std::shared_ptr<const FrameworkProfile>>& all_profiles() {
  static const std::vector<std::shared_ptr<const FrameworkProfile>> profiles = [] {
    std::vector<std::shared_ptr<const FrameworkProfile>> out;
    YamlNode root = load_embedded_catalog("models/catalog/frameworks.yaml");
    root.check_keys({"frameworks"});
    YamlNode f = root.at("frameworks");
    for (const auto& name : f.keys()) out.push_back(std::make_shared<const FrameworkProfile>(parse_profile(name, f.at(name))));
    return out;
  }();
  return profiles;
}

std::vector<int> version_parts(const std::string& v) {
  std::vector<int> parts;
  std::stringstream ss(v);
  std::string item;
  while (std::getline(ss, item, '.')) {
    int x = 0;
    for (char c : item) {
      if (c < '0' || c > '9') break;
      x = x * 10 + (c - '0');
      if (x > 1000000) break;
    }
    parts.push_back(x);
  }
  return parts;
}

}  // namespace

int compare_versions(const std::string& a, const std::string& b) {
  if (a.empty() || b.empty()) return a.empty() == b.empty() ? 0 : (a.empty() ? 1 : -1);
  auto x = version_parts(a), y = version_parts(b);
  for (size_t i = 0; i < std::max(x.size(), y.size()); ++i) {
    int u = i < x.size() ? x[i] : 0, v = i < y.size() ? y[i] : 0;
    if (u != v) return u < v ? -1 : 1;
  }
  return 0;
}

const std::vector<std::string>& framework_names() {
  static const std::vector<std::string> names = {"ideal", "deepspeed", "fsdp1", "fsdp2", "smp", "internevo"};
  return names;
}

std::vector<std::string> framework_kinds(const std::string& family) {
  std::vector<std::string> kinds;
  for (const auto& p : all_profiles()) {
    if (p->family != family) continue;
    if (p->kinds.empty()) return {};
    for (const auto& k : p->kinds)
      if (std::find(kinds.begin(), kinds.end(), k) == kinds.end()) kinds.push_back(k);
  }
  return kinds;
}

std::shared_ptr<const FrameworkProfile> resolve_framework(const std::string& family, const std::string& version,
                                                          const std::string& kind) {
  std::string known;
  std::shared_ptr<const FrameworkProfile> newest;
  for (const auto& ptr : all_profiles()) {
    const FrameworkProfile& p = *ptr;
    if (p.family != family) continue;
    if (!kind.empty() && !p.kinds.empty() && std::find(p.kinds.begin(), p.kinds.end(), kind) == p.kinds.end()) continue;
    known += fmt::format("{}{} ({}..{})", known.empty() ? "" : ", ", p.name, p.first_version.empty() ? "*" : p.first_version,
                         p.last_version.empty() ? "" : p.last_version);
    if (!newest || compare_versions(p.last_version, newest->last_version) > 0) newest = ptr;
    if (version.empty()) continue;
    const bool after_first = p.first_version.empty() || compare_versions(version, p.first_version) >= 0;
    const bool before_last = p.last_version.empty() || compare_versions(version, p.last_version) <= 0;
    if (after_first && before_last) return ptr;
  }
  if (!newest) throw std::invalid_argument(kind.empty() ? "unknown framework '" + family + "'"
                                                        : fmt::format("{} has no profile that runs {}", family, kind));
  if (!version.empty()) throw std::invalid_argument(fmt::format("no {} profile covers version {}; known: {}", family, version, known));
  return newest;
}

}  // namespace micsim
