// micsim collective --instance NAME --nodes N [--gpus-per-node G] --op OP -b MIN -e MAX -f FACTOR
// A simulated nccl-tests run: the same column layout (time, algbw, busbw with nccl-tests' factors),
// readable by `micsim calibrate`; --json adds the algorithm and protocol NCCL would pick.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <iostream>

#include "models/calibration/calibration.hpp"
#include "models/hardware/catalog.hpp"
#include "cli/commands.hpp"
#include "models/io/json_text.hpp"
#include "sim/des/des_engine.hpp"
#include "validation/nccl_tests.hpp"

namespace micsim::cli {


namespace {

// One comment line under the table: where NCCL's pick (rated on its own model) is slower than the fastest
// candidate on the measured network, and by how much at worst; model times, so both engines print the same.
std::string mispick_note(const std::vector<CollectiveEstimate>& picked, const std::vector<CollectiveEstimate>& fastest,
                         const std::vector<double>& sizes) {
  if (fastest.empty()) return "";
  int slower = 0;
  size_t worst = 0;
  double worst_gap = 0;
  for (size_t i = 0; i < picked.size(); ++i) {
    if (!(fastest[i].time_s > 0)) continue;  // one rank: nothing to communicate
    const double gap = picked[i].time_s / fastest[i].time_s - 1;
    if (gap > 1e-9) ++slower;
    if (gap > worst_gap) worst_gap = gap, worst = i;
  }
  if (slower == 0) return "# The picks above (NCCL's model, or the instance's tuner plugin) are the fastest candidates on this network\n";
  return fmt::format("# The pick (NCCL's model, or the instance's tuner plugin) is slower than the fastest candidate on this network at "
                     "{} of {} sizes; most at {:.0f} B: {}/{} {:.2f} us, "
                     "{}/{} {:.2f} us (+{:.1f} %), what a tuner that knew this network would gain (docs/model.md sec 4.6)\n",
                     slower, picked.size(), sizes[worst], to_string(picked[worst].algorithm), to_string(picked[worst].protocol),
                     picked[worst].time_s * 1e6, to_string(fastest[worst].algorithm), to_string(fastest[worst].protocol),
                     fastest[worst].time_s * 1e6, 100 * worst_gap);
}

}  // namespace

using des::simgrid_collective_times;

// nccl-tests size syntax: 8, 64K, 1M, 8G (binary multiples).
double parse_size(const std::string& flag, const std::string& s) {
  if (s.empty()) throw InputError({flag, 0, 0}, "", "expected a size like 8, 64K, 1M or 8G");
  double mult = 1;
  std::string digits = s;
  char last = char(std::toupper(static_cast<unsigned char>(s.back())));
  if (last == 'K' || last == 'M' || last == 'G' || last == 'T') {
    mult = last == 'K' ? 1024.0 : last == 'M' ? 1048576.0 : last == 'G' ? 1073741824.0 : 1099511627776.0;
    digits = s.substr(0, s.size() - 1);
  }
  char* end = nullptr;
  double v = std::strtod(digits.c_str(), &end);
  if (digits.empty() || *end != '\0' || !(v > 0) || v * mult > 1e15)
    throw InputError({flag + " " + s, 0, 0}, "", "expected a size > 0 like 8, 64K, 1M or 8G (at most 1e15 bytes)");
  return v * mult;
}

const InstanceSpec& lookup_instance(const std::string& flag, const std::string& name) {
  const auto& cat = HardwareCatalog::builtin();
  if (const InstanceSpec* i = cat.find_instance(name)) return *i;
  std::string hint = closest_match(name, cat.instance_names());
  throw InputError({flag + " " + name, 0, 0}, "instance",
                   fmt::format("unknown instance{}; known: {}", hint.empty() ? "" : fmt::format(" (did you mean '{}'?)", hint),
                               join_choices(cat.instance_names())));
}

Runner add_collective(CLI::App& app) {
  struct Opts {
    std::string instance, op = "all_reduce", min = "8", max = "1G", factor = "2", algo, proto, calibration, json, engine = "analytic";
    int nodes = 1, gpus_per_node = 0;
    bool collnet = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("collective", "Predict a collective like nccl-tests would measure it");
  cmd->add_option("--instance", o->instance, "Catalog instance type")->required();
  cmd->add_option("--nodes", o->nodes, "Nodes (default 1)");
  cmd->add_option("--gpus-per-node", o->gpus_per_node, "GPUs per node taking part (default: all)");
  cmd->add_option("--op", o->op, "all_gather | reduce_scatter | all_reduce | broadcast | reduce");
  cmd->add_option("-b,--minbytes", o->min, "Smallest size (nccl-tests syntax: 8, 64K, 1M, 8G)");
  cmd->add_option("-e,--maxbytes", o->max, "Largest size");
  cmd->add_option("-f,--stepfactor", o->factor, "Multiply the size by this between rows");
  cmd->add_option("--algo", o->algo,
                  "Force an algorithm, like NCCL_ALGO: ring | tree | nvls | nvls_tree | collnet_direct | collnet_chain");
  cmd->add_flag("--collnet", o->collnet,
                "The cluster has in-network reduction (SHARP switches, the CollNet plugin, NCCL_COLLNET_ENABLE=1)");
  cmd->add_option("--proto", o->proto, "Force a protocol, like NCCL_PROTO: LL | LL128 | Simple");
  cmd->add_option("--calibration", o->calibration, "Calibration file to apply");
  cmd->add_option("--engine", o->engine, "analytic (default) or simgrid");
  cmd->add_option("--json", o->json, "Write the rows with algorithm and protocol as JSON to FILE ('-' = stdout)");
  return [o]() -> int {
    const InstanceSpec& inst = lookup_instance("--instance", o->instance);
    auto op = parse_collective_op(o->op);
    if (!op) throw InputError({"--op " + o->op, 0, 0}, "op", "expected all_gather | reduce_scatter | all_reduce | broadcast | reduce");
    if (o->nodes < 1 || o->nodes > (1 << 16)) throw InputError({"--nodes", 0, 0}, "nodes", "expected an integer in [1, 65536]");
    int g = o->gpus_per_node > 0 ? o->gpus_per_node : inst.gpus_per_node;
    if (o->gpus_per_node < 0 || g > inst.gpus_per_node)
      throw InputError({"--gpus-per-node", 0, 0}, "gpus_per_node", fmt::format("expected 1..{} for {}", inst.gpus_per_node, inst.name));
    double lo = parse_size("-b", o->min), hi = parse_size("-e", o->max);
    if (hi < lo) throw InputError({"-e " + o->max, 0, 0}, "maxbytes", "expected maxbytes >= minbytes");
    char* end = nullptr;
    double factor = std::strtod(o->factor.c_str(), &end);
    if (*end != '\0' || !(factor > 1.0) || factor > 1e6) throw InputError({"-f " + o->factor, 0, 0}, "stepfactor", "expected a factor > 1");
    // Rows counted before any is computed: -b 8 -e 8G -f 1.0000001 would be 2e8 rows.
    constexpr double kMaxRows = 10000;
    const double rows_needed = std::floor(std::log(hi / lo) / std::log(factor) + 1e-9) + 1;
    if (rows_needed > kMaxRows)
      throw InputError({"-f " + o->factor, 0, 0}, "stepfactor",
                       fmt::format("{:.3g} rows from {} to {} bytes; at most {:.0f} (use a larger factor)", rows_needed, o->min, o->max, kMaxRows));
    CollectiveChoice choice;
    if (!o->algo.empty()) {
      choice.algorithm = parse_nccl_algorithm(o->algo);
      if (!choice.algorithm)
        throw InputError({"--algo " + o->algo, 0, 0}, "algo", "expected ring | tree | nvls | nvls_tree | collnet_direct | collnet_chain");
    }
    if (!o->proto.empty()) {
      choice.protocol = parse_protocol(o->proto);
      if (!choice.protocol) throw InputError({"--proto " + o->proto, 0, 0}, "proto", "expected LL | LL128 | Simple");
    }
    if (o->engine != "analytic" && o->engine != "simgrid")
      throw InputError({"--engine " + o->engine, 0, 0}, "engine", "expected analytic or simgrid");
    OutputPlan outputs;
    outputs.input(o->calibration);
    outputs.output("--json", o->json);
    NetworkParams net = NetworkParams::from_instance(inst);
    if (o->collnet) {
      if (std::string why = collnet_problem_if_enabled(inst.network); !why.empty())
        throw InputError({"--collnet", 0, 0}, "collnet", why);
      net.collnet = true;
    }
    Calibration cal;
    if (!o->calibration.empty()) {
      cal = load_calibration(o->calibration);
      cal.check_applies_to(inst.name, {"--calibration " + o->calibration, 0, 0});
      cal.apply(net);
    }
    const std::string extrapolation = cal.network_extrapolation_note(inst.network.fabric, o->nodes);
    CollectiveModel model(net);
    const int ranks = g * o->nodes;
    GroupLayout layout = GroupLayout::make(ranks, o->nodes);
    std::string text = fmt::format("# micsim collective: {}_perf as modelled for {} ({} node(s) x {} GPUs); network: {}\n",
                                   o->op, inst.name, o->nodes, g, net.source);
    // As NCCL_DEBUG=INFO would show it: the log then reads back as a CollNet run (collnet_enabled).
    if (net.collnet) text += "# NCCL INFO NCCL_COLLNET_ENABLE set by environment to 1 (in-network reduction: SHARP)\n";
    if (!extrapolation.empty()) text += "# micsim warning: " + extrapolation + "\n";
    text += "#\n# Using devices\n";
    // nccl-tests lists every rank; past 64 the list says how many it leaves out (a 65,536-node run
    // would otherwise print half a million lines before the table).
    constexpr int kRankLines = 64;
    for (int r = 0; r < std::min(ranks, kRankLines); ++r)
      text += fmt::format("#  Rank {:>2} Group  0 Pid {:>6} on {:>10} device {:>2} [simulated] {}\n", r, 0,
                          fmt::format("node{}", r / g), r % g, inst.gpu.name);
    if (ranks > kRankLines) text += fmt::format("#  ... {} more ranks (node{} .. node{})\n", ranks - kRankLines, kRankLines / g, o->nodes - 1);
    text += "#\n" + nccl_tests_header();
    nlohmann::json rows = nlohmann::json::array();
    // Sizes as nccl-tests steps them: multiply by the factor, rounded to whole elements per rank.
    const int elem = 4;
    std::vector<double> sizes;
    std::vector<CollectiveEstimate> estimates;
    for (double b = lo; b <= hi * (1 + 1e-12); b *= factor) {
      double bytes = std::max<double>(elem, std::floor(b / elem) * elem);
      if (*op == CollectiveOp::AllGather || *op == CollectiveOp::ReduceScatter)
        bytes = std::max<double>(double(elem) * ranks, std::floor(bytes / (elem * ranks)) * elem * ranks);
      sizes.push_back(bytes);
      estimates.push_back(model.estimate(*op, bytes, layout, choice));
    }
    // A forced algorithm or protocol the hardware cannot run is an error, not a silent fallback.
    if (choice.algorithm || choice.protocol) {
      for (double bytes : {sizes.front(), sizes.back()}) {
        bool available = false;
        std::vector<std::string> names;
        for (const auto& c : model.candidates(*op, bytes, layout)) {
          available |= (!choice.algorithm || c.algorithm == *choice.algorithm) && (!choice.protocol || c.protocol == *choice.protocol);
          names.push_back(std::string(to_string(c.algorithm)) + "/" + to_string(c.protocol));
        }
        std::sort(names.begin(), names.end());
        names.erase(std::unique(names.begin(), names.end()), names.end());
        if (!available)
          throw InputError({o->algo.empty() ? "--proto " + o->proto : "--algo " + o->algo, 0, 0}, "",
                           fmt::format("{} on {} x {} ({} nodes) cannot run {}{}{}; available: {}", o->op, o->nodes, inst.name, o->nodes,
                                       o->algo, o->algo.empty() || o->proto.empty() ? "" : "/", o->proto, join_choices(names)));
      }
    }
    // What a tuner that knew this network's measured costs would run instead (docs/model.md sec 4.6): shown
    // beside NCCL's pick, so the cost of NCCL rating the links at their nominal speed is visible.
    std::vector<CollectiveEstimate> fastest;
    if (!choice.algorithm && !choice.protocol) {
      NetworkParams knowing = net;
      knowing.choose_fastest = true;
      const CollectiveModel tuner(knowing);
      for (double bytes : sizes) fastest.push_back(tuner.estimate(*op, bytes, layout));
    }
    std::vector<double> times;
    for (const auto& e : estimates) times.push_back(e.time_s);
    if (o->engine == "simgrid") times = simgrid_collective_times(inst, o->nodes, g, net, estimates);
    for (size_t i = 0; i < sizes.size(); ++i) {
      const double bytes = sizes[i];
      CollectiveEstimate e = estimates[i];
      e.time_s = times[i];
      double f = (*op == CollectiveOp::Broadcast || *op == CollectiveOp::Reduce) ? 1.0 : busbw_factor(*op, ranks);
      text += nccl_tests_line(*op, bytes, elem, e.time_s, f);
      rows.push_back({{"size_bytes", json_bytes(bytes)}, {"count", int64_t(bytes / elem)}, {"time_us", e.time_s * 1e6},
                      {"algbw_GBps", e.algbw() / 1e9}, {"busbw_GBps", e.algbw() * f / 1e9},
                      {"algorithm", to_string(e.algorithm)}, {"protocol", to_string(e.protocol)},
                      {"latency_us", e.latency_s * 1e6}, {"bottleneck", to_string(e.bottleneck)},
                      {"selected_by", choice.algorithm || choice.protocol ? std::string("forced")
                                      : e.tuner ? "tuner " + e.tuner->name : std::string("nccl")}});
      if (!fastest.empty())
        rows.back()["fastest"] = {{"algorithm", to_string(fastest[i].algorithm)}, {"protocol", to_string(fastest[i].protocol)},
                                  {"time_us", fastest[i].time_s * 1e6}};
    }
    text += mispick_note(estimates, fastest, sizes);
    if (!o->json.empty()) {
      nlohmann::json j = {{"instance", inst.name}, {"nodes", o->nodes}, {"gpus_per_node", g}, {"op", o->op},
                          {"engine", o->engine}, {"network_source", net.source}, {"rows", rows},
                          {"warnings", extrapolation.empty() ? nlohmann::json::array() : nlohmann::json::array({extrapolation})}};
      write_output_file(o->json, json_text(versioned(j, "collective")));
    }
    if (o->json != "-") write_stdout(text);
    return 0;
  };
}

}  // namespace micsim::cli
