#include "validation/collective_validation.hpp"

#include <map>
#include <set>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <tuple>

#include "models/collective/nccl_constants.hpp"
#include "models/hardware/catalog.hpp"
#include "models/io/yaml_node.hpp"
#include "validation/least_squares.hpp"

namespace micsim {

static const std::set<std::string> kPriorTerms = {
    "inter_latency_us", "inter_fixed_latency_us", "inter_efficiency", "inter_efficiency_at_scale", "inter_ramp",
    "inter_ll128_efficiency", "inter_tree_efficiency", "intra_efficiency", "intra_ramp", "call_overhead_us", "nvls_efficiency"};

ClusterMap ClusterMap::load(const std::string& path) {
  YamlNode root = YamlNode::load_file(path);
  root.check_keys({"clusters", "not_modelled", "fitted_on"});
  ClusterMap m;
  if (auto f = root.get("fitted_on"))
    for (const auto& group : f->keys()) {  // a fabric, or "intra"
      if (group != "intra" && !HardwareCatalog::builtin().find_fabric(group)) f->at(group).fail("unknown fabric '" + group + "'");
      for (const auto& file : f->at(group).keys())
        for (const auto& term : f->at(group).at(file).items()) {
          const std::string t = term.as_string();
          if (!kPriorTerms.count(t)) term.fail("unknown term '" + t + "' (one of fit_network's terms)");
          m.fitted_on_[group][file].insert(t);
        }
    }
  if (root.has("not_modelled"))
    for (const auto& v : root.at("not_modelled").items()) m.not_modelled_.push_back(v.as_string());
  for (const auto& e : root.at("clusters").items()) {
    e.check_keys({"match", "instance"});
    std::string inst = e.at("instance").as_string();
    if (!HardwareCatalog::builtin().find_instance(inst)) e.at("instance").fail("unknown instance '" + inst + "'");
    m.entries_.emplace_back(e.at("match").as_string(), inst);
  }
  return m;
}

ClusterMap ClusterMap::builtin() {
  static const ClusterMap m = load(std::string(MICSIM_SOURCE_DIR) + "/validation/data/nccl-tests-clusters.yaml");
  return m;
}

std::string ClusterMap::unmodelled_setting(const std::string& text) const {
  for (const auto& name : not_modelled_)
    if (!nccl_setting(text, name).empty()) return name;
  return "";
}

static std::string file_name(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

std::set<std::string> ClusterMap::terms_fitted_on(const std::string& fabric, const std::string& file) const {
  std::set<std::string> out;
  for (const std::string& group : {fabric, std::string("intra")}) {
    auto g = fitted_on_.find(group);
    if (g == fitted_on_.end()) continue;
    auto f = g->second.find(file_name(file));
    if (f != g->second.end()) out.insert(f->second.begin(), f->second.end());
  }
  return out;
}

std::vector<std::string> ClusterMap::files_fitted_on(const std::string& group) const {
  std::vector<std::string> out;
  auto g = fitted_on_.find(group);
  if (g != fitted_on_.end())
    for (const auto& [file, terms] : g->second) out.push_back(file);
  return out;
}

std::optional<std::string> ClusterMap::instance_for(const NcclTestRow& row) const {
  if (!unmodelled_setting(row.source).empty() || !unmodelled_setting(row.environment).empty()) return std::nullopt;
  return instance_for(row.cluster);
}

std::optional<std::string> ClusterMap::instance_for(const std::string& cluster) const {
  if (!unmodelled_setting(cluster).empty()) return std::nullopt;
  for (const auto& [match, inst] : entries_)
    if (cluster.find(match) != std::string::npos) return inst;
  return std::nullopt;
}

ErrorSummary summarize_errors(const std::vector<double>& rel) {
  ErrorSummary s;
  s.count = rel.size();
  if (rel.empty()) return s;
  std::vector<double> a;
  for (double e : rel) a.push_back(std::fabs(e)), s.mean_signed += e / double(rel.size());
  std::sort(a.begin(), a.end());
  auto quantile = [&](double q) {  // linear interpolation between order statistics
    double pos = q * (a.size() - 1);
    size_t lo = size_t(std::floor(pos)), hi = size_t(std::ceil(pos));
    return a[lo] + (a[hi] - a[lo]) * (pos - lo);
  };
  s.median_abs = quantile(0.5);
  s.p90_abs = quantile(0.9);
  return s;
}

double predict_time(const NetworkParams& net, const NcclTestRow& row) {
  CollectiveModel m(net);
  return m.estimate(row.op, row.bytes, GroupLayout::make(row.ranks, row.nodes), row.forced).time_s;
}

// A calibration is applied only to the instance it was measured on; other rows keep the defaults.
static NetworkParams params_for(const std::string& instance, const Calibration* cal) {
  NetworkParams net = NetworkParams::from_instance(HardwareCatalog::builtin().instance(instance));
  if (cal && cal->instance == instance) cal->apply(net);
  return net;
}

std::vector<CollectiveComparison> compare_collectives(const std::vector<NcclTestRow>& rows, const ClusterMap& map,
                                                      const std::string& instance_override, const Calibration* cal) {
  std::vector<CollectiveComparison> out;
  for (const auto& r : rows) {
    if (!r.op_known || r.ranks < 2) continue;
    std::string inst = instance_override;
    if (inst.empty()) {
      auto m = map.instance_for(r);
      if (!m) continue;
      inst = *m;
    }
    const InstanceSpec& spec = HardwareCatalog::builtin().instance(inst);
    if (r.ranks / r.nodes > spec.gpus_per_node) continue;
    CollectiveComparison c;
    c.row = r;
    c.instance = inst;
    NetworkParams net = params_for(inst, cal);
    c.estimate = CollectiveModel(net).estimate(r.op, r.bytes, GroupLayout::make(r.ranks, r.nodes), r.forced);
    if (r.bytes >= 1024.0 * 1024.0) {
      auto bus = r.busbw_or_derived();
      if (!bus || *bus <= 0) continue;
      c.metric = "busbw";
      c.published = *bus;
      c.predicted = c.estimate.busbw();
    } else if (r.bytes <= 64.0 * 1024.0) {
      auto t = r.time_or_derived();
      if (!t || *t <= 0) continue;
      c.metric = "time";
      c.published = *t;
      c.predicted = c.estimate.time_s;
    } else {
      continue;
    }
    out.push_back(c);
  }
  return out;
}

namespace {

// A fitted term. The fit runs over positive values (log space): a term that may be negative is fitted as
// value - offset (offset = its lower bound), and lo/hi bound the term itself.
struct Param {
  std::string name;
  std::function<double&(NetworkParams&)> ref;
  double lo, hi;
  double offset = 0;
};

// Start values that owe nothing to the catalog (a middle, a low and a high guess of each term), so that a
// fit can be started where no catalog value fitted on the same files leads it (leave one source out).
std::vector<double> neutral_starts(const std::string& name) {
  if (name == "inter_latency_us") return {5e-6, 1e-6, 20e-6};
  if (name == "inter_fixed_latency_us" || name == "call_overhead_us") return {2e-6, 0.5e-6, 10e-6};
  if (name.find("ramp_half") != std::string::npos) return {1024.0 * 1024, 256.0 * 1024, 4096.0 * 1024};
  if (name.find("ramp_min") != std::string::npos) return {0.5, 0.2, 0.8};
  if (name == "intra_efficiency") return {0.98, 0.8, 1.0};
  if (name == "nvls_efficiency") return {0.73, 0.5, 0.9};
  if (name == "inter_ll128_efficiency" || name == "inter_tree_efficiency") return {1.0, 0.7, 1.0};
  return {0.9, 0.6, 0.97};  // inter_efficiency, inter_efficiency_at_scale
}

// Generic priors for the terms fit_network can fit, in place of the catalog's values. The catalog's are
// fitted on published files, perhaps on the very file a held-out score is for; a term the other files
// cannot inform must then fall back on something no file determined.
void set_prior(NetworkParams& n, const std::string& term) {
  if (term == "inter_latency_us") n.inter_latency_s = 5e-6;  // an InfiniBand-like hop
  if (term == "inter_fixed_latency_us") n.inter_fixed_latency_s = 0;
  if (term == "inter_efficiency") n.inter_efficiency = 0.9;
  if (term == "inter_efficiency_at_scale") n.inter_efficiency_at_scale = 0.9;
  if (term == "inter_ramp") n.inter_ramp_min = 1.0, n.inter_ramp_half_bytes = 0;  // no ramp
  if (term == "inter_ll128_efficiency") n.inter_ll128_efficiency = 1.0;            // NCCL's own rates
  if (term == "inter_tree_efficiency") n.inter_tree_efficiency = 1.0;
  if (term == "intra_efficiency") n.intra_efficiency = 0.98;
  if (term == "intra_ramp") n.intra_ramp_min = 1.0, n.intra_ramp_half_bytes = 0;
  if (term == "call_overhead_us") n.call_overhead_s = 0;
  if (term == "nvls_efficiency" && nccl::nvls_efficiency(n.arch) > 0) n.nvls_efficiency = nccl::nvls_efficiency(n.arch);
}

// The fit parameter (Param::name) a prior term covers: the ramps' two parameters share one term.
std::string prior_term(const std::string& param) {
  if (param == "inter_ramp_min" || param == "inter_ramp_half_kib") return "inter_ramp";
  if (param == "intra_ramp_min" || param == "intra_ramp_half_kib") return "intra_ramp";
  return param;
}

}  // namespace

NetworkFit fit_network(const InstanceSpec& inst, const std::vector<NcclTestRow>& all_rows, const FitOptions& opt) {
  NetworkFit fit;
  const NetworkParams base = [&] {
    NetworkParams n = NetworkParams::from_instance(inst);
    for (const auto& t : opt.priors) set_prior(n, t);
    return n;
  }();
  const bool from_priors = !opt.priors.empty();
  // Rows that can inform the fit.
  for (const auto& r : all_rows) {
    if (!r.op_known || r.ranks < 2 || r.ranks / r.nodes > inst.gpus_per_node || !r.time_or_derived()) continue;
    if (r.nodes == 2 && r.op == CollectiveOp::AllReduce && !opt.include_two_node_allreduce) continue;
    fit.rows.push_back(r);
  }
  // A parameter is fitted only when some rows depend on it: latencies on small messages (<= 64 KiB),
  // efficiencies on large ones (>= 64 MiB), pipeline-step terms on mid sizes (1-256 MiB).
  auto any = [&](auto pred) {
    for (const auto& r : fit.rows)
      if (pred(r)) return true;
    return false;
  };
  const double KiB = 1024, MiB = 1024 * KiB;
  std::vector<Param> params;
  if (any([&](const NcclTestRow& r) { return r.nodes > 1 && r.bytes <= 64 * KiB; }))
    params.push_back({"inter_latency_us", [](NetworkParams& n) -> double& { return n.inter_latency_s; }, kMinInterLatencyS, 1e-2, kMinInterLatencyS - 1e-7});
  // The per-collective crossing cost is told apart from the per-hop one only by small messages at two
  // node counts (hops grow with the nodes, the crossing does not); with one count they trade off freely.
  std::set<int> small_counts;
  for (const auto& r : fit.rows)
    if (r.nodes > 1 && r.bytes <= 64 * KiB) small_counts.insert(r.nodes);
  if (small_counts.size() >= 2)
    params.push_back({"inter_fixed_latency_us", [](NetworkParams& n) -> double& { return n.inter_fixed_latency_s; }, 1e-8, 1e-3});
  if (any([&](const NcclTestRow& r) { return r.nodes > 1 && r.bytes >= 64 * MiB; }))
    params.push_back({"inter_efficiency", [](NetworkParams& n) -> double& { return n.inter_efficiency; }, 0.05, 1.0});
  if (any([&](const NcclTestRow& r) { return r.nodes > 1 && r.bytes >= MiB && r.bytes <= 256 * MiB; })) {
    params.push_back({"inter_ramp_min", [](NetworkParams& n) -> double& { return n.inter_ramp_min; }, 0.05, 1.0});
    params.push_back({"inter_ramp_half_kib", [](NetworkParams& n) -> double& { return n.inter_ramp_half_bytes; }, 1.0, 1e10});
  }
  if (any([&](const NcclTestRow& r) { return r.nodes >= 4 && r.bytes >= 64 * MiB; }))
    params.push_back({"inter_efficiency_at_scale", [](NetworkParams& n) -> double& { return n.inter_efficiency_at_scale; }, 0.05, 1.0});
  // Terms of the algorithms a tuner plugin forces at >= 3 nodes: fitted only where such rows exist.
  auto tuned = [&](const NcclTestRow& r, auto pred) {
    if (!base.tuner || r.bytes < 64 * MiB) return false;
    auto m = base.tuner->matches(r.op, r.bytes, r.ranks, r.nodes);  // empty below the plugin's min_nodes
    return !m.empty() && pred(*m.front());
  };
  // LL128's delivery on the fabric: fitted wherever rows run it across nodes at sizes where bandwidth counts
  // (NCCL's pick, or the plugin's). NCCL keeps picking it whatever it costs, so its cost shows in those rows.
  auto runs_ll128 = [&](const NcclTestRow& r) {
    return r.nodes > 1 && r.bytes >= MiB &&
           CollectiveModel(base).estimate(r.op, r.bytes, GroupLayout::make(r.ranks, r.nodes), r.forced).protocol == Protocol::LL128;
  };
  if (any(runs_ll128))
    params.push_back({"inter_ll128_efficiency", [](NetworkParams& n) -> double& { return n.inter_ll128_efficiency; }, 0.05, 1.5});
  if (any([&](const NcclTestRow& r) {
        return tuned(r, [](const TunerRegion& t) { return t.algorithm != NcclAlgorithm::Ring && t.protocol == Protocol::Simple; });
      }))
    params.push_back({"inter_tree_efficiency", [](NetworkParams& n) -> double& { return n.inter_tree_efficiency; }, 0.05, 1.5});
  if (any([&](const NcclTestRow& r) { return r.nodes == 1 && r.bytes >= 64 * MiB; }))
    params.push_back({"intra_efficiency", [](NetworkParams& n) -> double& { return n.intra_efficiency; }, 0.05, 1.25});
  if (any([&](const NcclTestRow& r) { return r.nodes == 1 && r.bytes >= MiB && r.bytes <= 256 * MiB; })) {
    params.push_back({"intra_ramp_min", [](NetworkParams& n) -> double& { return n.intra_ramp_min; }, 0.05, 1.0});
    params.push_back({"intra_ramp_half_kib", [](NetworkParams& n) -> double& { return n.intra_ramp_half_bytes; }, 1.0, 1e10});
  }
  if (any([&](const NcclTestRow& r) { return r.nodes == 1 && r.bytes <= 64 * KiB; }))
    params.push_back({"call_overhead_us", [](NetworkParams& n) -> double& { return n.call_overhead_s; }, 1e-8, 1e-3});
  if (base.nvls && any([&](const NcclTestRow& r) { return r.nodes == 1 && r.op == CollectiveOp::AllReduce && r.bytes >= 64 * MiB; }))
    params.push_back({"nvls_efficiency", [](NetworkParams& n) -> double& { return n.nvls_efficiency; }, 0.05, 2.0});
  const int P = int(params.size()), R = int(fit.rows.size());
  NetworkParams net = base;
  for (const auto& row : fit.rows) fit.before.push_back(predict_time(base, row) / *row.time_or_derived() - 1.0);
  std::set<std::string> unidentified;
  if (P > 0 && R >= P) {
    auto apply = [&](const std::vector<double>& v) {
      NetworkParams n = base;
      for (int j = 0; j < P; ++j) params[j].ref(n) = v[j] + params[j].offset;
      return n;
    };
    // Residual = log(predicted / measured) time; Huber (delta 0.1) so that rows from another software
    // stack or a noisy run pull linearly, not quadratically.
    auto residuals = [&](const std::vector<double>& v) {
      NetworkParams n = apply(v);
      std::vector<double> r(R);
      for (int i = 0; i < R; ++i) r[i] = std::log(predict_time(n, fit.rows[i]) / *fit.rows[i].time_or_derived());
      return r;
    };
    auto bounded = [&](const Param& p, double v) {
      if (v <= p.lo) v = p.lo > 0 ? p.lo : 1e-7;
      return FitParameter{p.name, std::min(v, p.hi) - p.offset, std::max(p.lo - p.offset, 1e-9), p.hi - p.offset};
    };
    // The fit is not convex (ramps, protocol picks), so it runs from several starts and keeps the lowest
    // cost on its own rows (the first on a tie): the catalog's values (with the priors put in their place,
    // if any), then three guesses that owe nothing to the catalog.
    std::vector<std::vector<FitParameter>> starts(1);
    for (auto& p : params) {
      double v = p.ref(net);
      // Start values for terms that are off by default.
      if (p.name.find("ramp_half") != std::string::npos && v <= 0) v = 1 << 20;
      if (p.name.find("ramp_min") != std::string::npos && v >= 1.0) v = 0.5;
      if ((p.name == "call_overhead_us" || p.name == "inter_fixed_latency_us") && v <= 0) v = 2e-6;
      starts[0].push_back(bounded(p, v));
    }
    for (int k = 0; k < 3; ++k) {
      std::vector<FitParameter> fp;
      for (auto& p : params) fp.push_back(bounded(p, neutral_starts(p.name)[k]));
      starts.push_back(fp);
    }
    FitOutcome outcome;
    for (size_t k = 0; k < starts.size(); ++k) {
      FitOutcome o = fit_least_squares(starts[k], residuals);
      if (k == 0 || o.cost < outcome.cost) outcome = o;
    }
    // A term the rows do not move (its rows are bound by another tier, say) ends wherever its start put
    // it; it goes back to the catalog's value (or the prior; "off" for a ramp) and does not count as fitted.
    auto cost_at = [&](const std::vector<double>& v) {
      std::vector<FitParameter> q = starts[0];
      for (int j = 0; j < P; ++j) q[j].value = v[j];
      return fit_least_squares(q, residuals, 0.1, 0).cost;
    };
    const double c0 = cost_at(outcome.values);
    for (int j = 0; j < P; ++j) {
      bool moves = false;
      for (double f : {0.9, 1.1}) {
        std::vector<double> w = outcome.values;
        w[j] = std::clamp(w[j] * f, starts[0][j].lo, starts[0][j].hi);
        moves = moves || std::fabs(cost_at(w) - c0) > 1e-9 * std::max(1.0, c0);
      }
      if (!moves) {
        NetworkParams b = base;
        outcome.values[j] = params[j].ref(b) - params[j].offset;
        unidentified.insert(params[j].name);
      }
    }
    fit.iterations = outcome.iterations;
    net = apply(outcome.values);
  }
  for (const auto& row : fit.rows) fit.after.push_back(predict_time(net, row) / *row.time_or_derived() - 1.0);
  Calibration& c = fit.calibration;
  c.instance = inst.name;
  if (from_priors) {  // every term, so that none falls back on the catalog's value
    c.inter_latency_s = net.inter_latency_s;
    c.inter_fixed_latency_s = net.inter_fixed_latency_s;
    c.inter_efficiency = net.inter_efficiency;
    c.inter_efficiency_at_scale = net.inter_efficiency_at_scale;
    c.intra_efficiency = net.intra_efficiency;
    c.call_overhead_s = net.call_overhead_s;
    c.nvls_efficiency = net.nvls_efficiency;
    c.inter_ll128_efficiency = net.inter_ll128_efficiency;
    c.inter_tree_efficiency = net.inter_tree_efficiency;
    c.inter_ramp_min = net.inter_ramp_min;
    c.inter_ramp_half_bytes = net.inter_ramp_half_bytes;
    c.intra_ramp_min = net.intra_ramp_min;
    c.intra_ramp_half_bytes = net.intra_ramp_half_bytes;
  }
  fit.unmoved.assign(unidentified.begin(), unidentified.end());
  for (const auto& p : params) {
    if (unidentified.count(p.name)) continue;
    fit.fitted.push_back(p.name);
    if (p.name == "inter_latency_us") c.inter_latency_s = net.inter_latency_s;
    if (p.name == "inter_fixed_latency_us") c.inter_fixed_latency_s = net.inter_fixed_latency_s;
    if (p.name == "inter_efficiency") c.inter_efficiency = net.inter_efficiency;
    if (p.name == "inter_efficiency_at_scale") c.inter_efficiency_at_scale = net.inter_efficiency_at_scale;
    if (p.name == "intra_efficiency") c.intra_efficiency = net.intra_efficiency;
    if (p.name == "call_overhead_us") c.call_overhead_s = net.call_overhead_s;
    if (p.name == "nvls_efficiency") c.nvls_efficiency = net.nvls_efficiency;
    if (p.name == "inter_ll128_efficiency") c.inter_ll128_efficiency = net.inter_ll128_efficiency;
    if (p.name == "inter_tree_efficiency") c.inter_tree_efficiency = net.inter_tree_efficiency;
    if (p.name == "inter_ramp_min") c.inter_ramp_min = net.inter_ramp_min;
    if (p.name == "inter_ramp_half_kib") c.inter_ramp_half_bytes = net.inter_ramp_half_bytes;
    if (p.name == "intra_ramp_min") c.intra_ramp_min = net.intra_ramp_min;
    if (p.name == "intra_ramp_half_kib") c.intra_ramp_half_bytes = net.intra_ramp_half_bytes;
  }
  for (const auto& t : opt.priors)
    if (std::none_of(params.begin(), params.end(),
                     [&](const Param& p) { return prior_term(p.name) == t && !unidentified.count(p.name); }))
      fit.at_prior.push_back(t);
  return fit;
}

std::vector<HeldOutComparison> compare_collectives_held_out(const std::vector<NcclTestRow>& rows, const ClusterMap& map) {
  std::vector<HeldOutComparison> out;
  // Rows by instance, with the file they came from.
  std::map<std::string, std::vector<const NcclTestRow*>> by_instance;
  for (const auto& r : rows)
    if (auto inst = map.instance_for(r)) by_instance[*inst].push_back(&r);
  for (const auto& [inst_name, inst_rows] : by_instance) {
    const InstanceSpec& inst = HardwareCatalog::builtin().instance(inst_name);
    std::map<std::string, std::vector<NcclTestRow>> by_file;
    for (const auto* r : inst_rows) by_file[r->file].push_back(*r);
    for (const auto& [file, held] : by_file) {
      std::vector<NcclTestRow> training;
      for (const auto& [other, rs] : by_file)
        if (other != file) training.insert(training.end(), rs.begin(), rs.end());
      std::optional<Calibration> cal;
      std::vector<std::string> at_prior;
      if (!training.empty()) {
        FitOptions fo;
        fo.include_two_node_allreduce = true;  // trees at two nodes are part of what the model predicts
        fo.priors = map.terms_fitted_on(inst.network.fabric.name, file);  // not the held-out file's own terms
        NetworkFit fit = fit_network(inst, training, fo);
        if (!fit.fitted.empty() || !fo.priors.empty()) cal = fit.calibration;
        at_prior = fit.at_prior;
      }
      for (const auto& c : compare_collectives(held, map, inst_name, cal ? &*cal : nullptr)) {
        HeldOutComparison h;
        h.c = c;
        h.fabric = inst.network.fabric.name;
        h.held_out = cal.has_value();
        h.training_rows = training.size();
        h.at_prior = at_prior;
        out.push_back(h);
      }
    }
  }
  return out;
}

std::vector<double> between_source_deviation(const std::vector<HeldOutComparison>& rows) {
  // Points measured by several files: file -> its values at that point.
  using Point = std::tuple<std::string, int, std::string, double, std::string>;
  std::map<Point, std::map<std::string, std::vector<double>>> points;
  auto point_of = [](const HeldOutComparison& h) {
    return Point{h.fabric, h.c.row.nodes, h.c.row.op_name, h.c.row.bytes, h.c.metric};
  };
  for (const auto& h : rows) points[point_of(h)][h.c.row.file].push_back(h.c.published);
  auto mean = [](const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return s / double(v.size());
  };
  std::vector<double> out;
  out.reserve(rows.size());
  for (const auto& h : rows) {
    const auto& files = points[point_of(h)];
    double others = 0;
    int n = 0;
    for (const auto& [file, values] : files)
      if (file != h.c.row.file) others += mean(values), ++n;
    out.push_back(n > 0 && others > 0 ? h.c.published / (others / n) - 1 : NAN);
  }
  return out;
}

}  // namespace micsim
