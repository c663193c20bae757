#include "validation/collective_validation.hpp"

#include <map>
#include <set>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <stdexcept>
#include <tuple>

#include "models/collective/nccl_constants.hpp"
#include "models/hardware/catalog.hpp"
#include "models/io/yaml_node.hpp"
#include "validation/least_squares.hpp"

namespace micsim {

namespace {

// Every network term fit_network can fit, in one table: where it lives in NetworkParams and in a calibration
// file, its bounds, the fitted_on term it belongs to (a ramp's two parameters share one), the generic prior a
// held-out fit puts in place of a catalog value fitted on the scored file (something no file determined),
// and three start values that owe nothing to the catalog (a middle, a low and a high guess). The fit runs
// over positive values (log space): a term that may be negative is fitted as value - offset (its lower bound).
struct Param {
  const char* name;   // as `micsim calibrate` reports it
  const char* term;   // as fitted_on names it
  double NetworkParams::*net;
  std::optional<double> Calibration::*cal;
  double lo, hi, offset;
  double prior;       // NaN: NCCL's own value (NVLS efficiency, by GPU)
  double starts[3];
};

constexpr double KiB = 1024, MiB = 1024 * KiB, kNcclOwn = std::numeric_limits<double>::quiet_NaN();
const Param kParams[] = {
    {"inter_latency_us", "inter_latency_us", &NetworkParams::inter_latency_s, &Calibration::inter_latency_s,
     kMinInterLatencyS, 1e-2, kMinInterLatencyS - 1e-7, 5e-6 /* an InfiniBand-like hop */, {5e-6, 1e-6, 20e-6}},
    {"inter_fixed_latency_us", "inter_fixed_latency_us", &NetworkParams::inter_fixed_latency_s, &Calibration::inter_fixed_latency_s,
     1e-8, 1e-3, 0, 0, {2e-6, 0.5e-6, 10e-6}},
    {"inter_efficiency", "inter_efficiency", &NetworkParams::inter_efficiency, &Calibration::inter_efficiency, 0.05, 1.0, 0, 0.9, {0.9, 0.6, 0.97}},
    {"inter_ramp_min", "inter_ramp", &NetworkParams::inter_ramp_min, &Calibration::inter_ramp_min, 0.05, 1.0, 0, 1.0 /* no ramp */, {0.5, 0.2, 0.8}},
    {"inter_ramp_half_kib", "inter_ramp", &NetworkParams::inter_ramp_half_bytes, &Calibration::inter_ramp_half_bytes, 1.0, 1e10, 0, 0,
     {MiB, 256 * KiB, 4 * MiB}},
    {"inter_efficiency_at_scale", "inter_efficiency_at_scale", &NetworkParams::inter_efficiency_at_scale, &Calibration::inter_efficiency_at_scale,
     0.05, 1.0, 0, 0.9, {0.9, 0.6, 0.97}},
    {"inter_ll128_efficiency", "inter_ll128_efficiency", &NetworkParams::inter_ll128_efficiency, &Calibration::inter_ll128_efficiency,
     0.05, 1.5, 0, 1.0 /* NCCL's own rate */, {1.0, 0.7, 1.0}},
    {"inter_tree_efficiency", "inter_tree_efficiency", &NetworkParams::inter_tree_efficiency, &Calibration::inter_tree_efficiency,
     0.05, 1.5, 0, 1.0, {1.0, 0.7, 1.0}},
    {"collnet_efficiency", "collnet_efficiency", &NetworkParams::collnet_efficiency, &Calibration::collnet_efficiency,
     0.05, 1.0, 0, 0.9, {0.9, 0.6, 0.97}},
    {"gpu_path_gbytes_per_s", "gpu_path_gbytes_per_s", &NetworkParams::gpu_path_bytes_per_s, &Calibration::gpu_path_bytes_per_s, 1e8, 1e12, 0,
     0 /* no limit */, {3e9, 1e9, 10e9}},
    {"intra_latency_scale", "intra_latency_scale", &NetworkParams::intra_latency_scale, &Calibration::intra_latency_scale, 0.1, 20.0, 0,
     1.0 /* NCCL's own */, {1.0, 0.5, 3.0}},
    {"intra_efficiency", "intra_efficiency", &NetworkParams::intra_efficiency, &Calibration::intra_efficiency, 0.05, 1.25, 0, 0.98, {0.98, 0.8, 1.0}},
    {"intra_ramp_min", "intra_ramp", &NetworkParams::intra_ramp_min, &Calibration::intra_ramp_min, 0.05, 1.0, 0, 1.0, {0.5, 0.2, 0.8}},
    {"intra_ramp_half_kib", "intra_ramp", &NetworkParams::intra_ramp_half_bytes, &Calibration::intra_ramp_half_bytes, 1.0, 1e10, 0, 0,
     {MiB, 256 * KiB, 4 * MiB}},
    {"call_overhead_us", "call_overhead_us", &NetworkParams::call_overhead_s, &Calibration::call_overhead_s, 1e-8, 1e-3, 0, 0, {2e-6, 0.5e-6, 10e-6}},
    {"nvls_efficiency", "nvls_efficiency", &NetworkParams::nvls_efficiency, &Calibration::nvls_efficiency, 0.05, 2.0, 0, kNcclOwn, {0.73, 0.5, 0.9}},
};

const Param& param(const std::string& name) {
  for (const auto& p : kParams)
    if (name == p.name) return p;
  throw std::logic_error("no network parameter " + name);
}

bool is_prior_term(const std::string& term) {
  return std::any_of(std::begin(kParams), std::end(kParams), [&](const Param& p) { return term == p.term; });
}

void set_prior(NetworkParams& n, const std::string& term) {
  for (const auto& p : kParams)
    if (term == p.term) {
      if (!std::isnan(p.prior)) n.*p.net = p.prior;
      else if (nccl::nvls_efficiency(n.arch) > 0) n.*p.net = nccl::nvls_efficiency(n.arch);
    }
}

}  // namespace

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
          if (!is_prior_term(t)) term.fail("unknown term '" + t + "' (one of fit_network's terms)");
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

// The network a row ran on: the instance's, with in-network reduction where the run enabled it.
static NetworkParams network_of_row(NetworkParams net, const NcclTestRow& row) {
  net.collnet = net.collnet || row.collnet;
  return net;
}

double predict_time(const NetworkParams& net, const NcclTestRow& row) {
  CollectiveModel m(network_of_row(net, row));
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
    const NetworkParams net = network_of_row(params_for(inst, cal), r);
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

// The terms these rows can inform: a term is fitted only when some rows depend on it. Latencies on small
// messages (<= 64 KiB), efficiencies on large ones (>= 64 MiB), pipeline-step terms on mid sizes (1-256 MiB).
std::vector<const Param*> terms_the_rows_inform(const std::vector<NcclTestRow>& rows, const NetworkParams& base) {
  auto any = [&](auto pred) {
    for (const auto& r : rows)
      if (pred(r)) return true;
    return false;
  };
  std::vector<const Param*> params;
  if (any([&](const NcclTestRow& r) { return r.nodes > 1 && r.bytes <= 64 * KiB; }))
    params.push_back(&param("inter_latency_us"));
  // The per-collective crossing cost is told apart from the per-hop one only by small messages at two
  // node counts (hops grow with the nodes, the crossing does not); with one count they trade off freely.
  std::set<int> small_counts;
  for (const auto& r : rows)
    if (r.nodes > 1 && r.bytes <= 64 * KiB) small_counts.insert(r.nodes);
  if (small_counts.size() >= 2)
    params.push_back(&param("inter_fixed_latency_us"));
  // The NVLink hops' latency is told apart from the network hops' only by small messages run with different
  // numbers of GPUs per node (a ring over n ranks on k nodes takes its network hops per node and its NVLink hops
  // per rank): two such mixes, one of them with NVLink hops, and the fit can separate the two costs.
  std::set<int> small_per_node;
  for (const auto& r : rows)
    if (r.nodes > 1 && r.bytes <= 64 * KiB) small_per_node.insert(r.ranks / r.nodes);
  if (small_per_node.size() >= 2 && *small_per_node.rbegin() > 1)
    params.push_back(&param("intra_latency_scale"));
  // One GPU's path to a host-staged network can bind only where fewer GPUs than the node has carry its
  // traffic: large messages run so tell it apart from the node's NIC efficiency (a term they turn out not to
  // move is dropped below, as any other).
  if (any([&](const NcclTestRow& r) { return r.nodes > 1 && r.ranks / r.nodes < base.gpus_per_node && r.bytes >= 64 * MiB; }))
    params.push_back(&param("gpu_path_gbytes_per_s"));
  if (any([&](const NcclTestRow& r) { return r.nodes > 1 && r.bytes >= 64 * MiB; }))
    params.push_back(&param("inter_efficiency"));
  if (any([&](const NcclTestRow& r) { return r.nodes > 1 && r.bytes >= MiB && r.bytes <= 256 * MiB; })) {
    params.push_back(&param("inter_ramp_min"));
    params.push_back(&param("inter_ramp_half_kib"));
  }
  if (any([&](const NcclTestRow& r) { return r.nodes >= 4 && r.bytes >= 64 * MiB; }))
    params.push_back(&param("inter_efficiency_at_scale"));
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
    params.push_back(&param("inter_ll128_efficiency"));
  if (any([&](const NcclTestRow& r) {
        return tuned(r, [](const TunerRegion& t) { return t.algorithm != NcclAlgorithm::Ring && t.protocol == Protocol::Simple; });
      }))
    params.push_back(&param("inter_tree_efficiency"));
  // SHARP's share of the NICs: fitted where runs went through the switches with sizes where bandwidth counts
  // (a run bound by NVLink inside the node does not move it, and the fit then leaves it where it was).
  if (any([&](const NcclTestRow& r) { return (r.collnet || base.collnet) && r.nodes > 1 && r.op == CollectiveOp::AllReduce && r.bytes >= 64 * MiB; }))
    params.push_back(&param("collnet_efficiency"));
  if (any([&](const NcclTestRow& r) { return r.nodes == 1 && r.bytes >= 64 * MiB; }))
    params.push_back(&param("intra_efficiency"));
  if (any([&](const NcclTestRow& r) { return r.nodes == 1 && r.bytes >= MiB && r.bytes <= 256 * MiB; })) {
    params.push_back(&param("intra_ramp_min"));
    params.push_back(&param("intra_ramp_half_kib"));
  }
  if (any([&](const NcclTestRow& r) { return r.nodes == 1 && r.bytes <= 64 * KiB; }))
    params.push_back(&param("call_overhead_us"));
  if (base.nvls && any([&](const NcclTestRow& r) { return r.nodes == 1 && r.op == CollectiveOp::AllReduce && r.bytes >= 64 * MiB; }))
    params.push_back(&param("nvls_efficiency"));
  return params;
}

// Least squares of log(predicted / measured) time over `rows` in the terms `params`, from four starts (the
// base's values, then three guesses that owe nothing to the catalog); a term whose ±10 % leaves the cost
// unchanged goes back to the base's value and is named in `unidentified`.
NetworkParams fit_terms(const std::vector<NcclTestRow>& rows, const NetworkParams& base, const std::vector<const Param*>& params,
                        std::set<std::string>& unidentified, int& iterations) {
  const int P = int(params.size()), R = int(rows.size());
  NetworkParams net = base;
  if (P > 0 && R >= P) {
    auto apply = [&](const std::vector<double>& v) {
      NetworkParams n = base;
      for (int j = 0; j < P; ++j) n.*params[j]->net = v[j] + params[j]->offset;
      return n;
    };
    // Residual = log(predicted / measured) time; Huber (delta 0.1) so that rows from another software
    // stack or a noisy run pull linearly, not quadratically.
    auto residuals = [&](const std::vector<double>& v) {
      NetworkParams n = apply(v);
      std::vector<double> r(R);
      for (int i = 0; i < R; ++i) r[i] = std::log(predict_time(n, rows[i]) / *rows[i].time_or_derived());
      return r;
    };
    auto bounded = [&](const Param* p, double v) {
      return FitParameter{p->name, std::clamp(v, p->lo, p->hi) - p->offset, std::max(p->lo - p->offset, 1e-9), p->hi - p->offset};
    };
    // The fit is not convex (ramps, protocol picks), so it runs from several starts and keeps the lowest
    // cost on its own rows (the first on a tie): the catalog's values (with the priors put in their place,
    // if any), then three guesses that owe nothing to the catalog.
    std::vector<std::vector<FitParameter>> starts(4);
    for (const Param* p : params) {
      const double v = base.*p->net;
      // A term that is off (a ramp at 1 or 0 KiB, no overhead: on or past a bound) starts from the middle guess.
      starts[0].push_back(bounded(p, v <= p->lo || v >= p->hi ? p->starts[0] : v));
      for (int k = 0; k < 3; ++k) starts[k + 1].push_back(bounded(p, p->starts[k]));
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
        outcome.values[j] = base.*params[j]->net - params[j]->offset;
        unidentified.insert(params[j]->name);
      }
    }
    iterations = outcome.iterations;
    net = apply(outcome.values);
  }
  return net;
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
  const std::vector<const Param*> params = terms_the_rows_inform(fit.rows, base);
  for (const auto& row : fit.rows) fit.before.push_back(predict_time(base, row) / *row.time_or_derived() - 1.0);
  std::set<std::string> unidentified;
  const NetworkParams net = fit_terms(fit.rows, base, params, unidentified, fit.iterations);
  for (const auto& row : fit.rows) fit.after.push_back(predict_time(net, row) / *row.time_or_derived() - 1.0);
  Calibration& c = fit.calibration;
  c.instance = inst.name;
  // Held out (priors), every term is written, so that none falls back on the catalog's value; otherwise
  // only those the rows moved.
  fit.unmoved.assign(unidentified.begin(), unidentified.end());
  for (const Param& p : kParams) {
    const bool in_fit = std::find(params.begin(), params.end(), &p) != params.end();
    const bool moved = in_fit && !unidentified.count(p.name);
    if (moved) fit.fitted.push_back(p.name);
    if (moved || from_priors) c.*p.cal = net.*p.net;
  }
  for (const auto& t : opt.priors)
    if (std::none_of(params.begin(), params.end(), [&](const Param* p) { return t == p->term && !unidentified.count(p->name); }))
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
  // Points measured by several files: file -> its values at that point. A point is one configuration:
  // the same ranks (2 nodes x 1 GPU is not 2 nodes x 8) and the same forced algorithm and protocol (a
  // ring forced by NCCL_ALGO is not NCCL's own pick), so the spread is between clusters, not setups.
  using Point = std::tuple<std::string, int, int, int, int, std::string, double, std::string>;
  std::map<Point, std::map<std::string, std::vector<double>>> points;
  auto point_of = [](const HeldOutComparison& h) {
    const CollectiveChoice& f = h.c.row.forced;
    return Point{h.fabric, h.c.row.nodes, h.c.row.ranks, f.algorithm ? int(*f.algorithm) : -1, f.protocol ? int(*f.protocol) : -1,
                 h.c.row.op_name, h.c.row.bytes, h.c.metric};
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
