// micsim catalog list [KIND] | catalog show NAME: what micsim knows (built-in catalog merged with
// --catalog files and MICSIM_CATALOG_PATH), so users can check a name or a price before using it.
#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "models/framework/framework.hpp"
#include "models/hardware/catalog.hpp"
#include "models/hardware/power_limit.hpp"
#include "models/hardware/prices.hpp"
#include "models/io/input_error.hpp"
#include "models/io/input_file.hpp"
#include "models/io/json_text.hpp"
#include "models/io/yaml_node.hpp"
#include "models/workload/model_spec.hpp"

namespace micsim::cli {

namespace {

using nlohmann::json;

json price_json(const PriceQuote& q) {
  return {{"tier", q.tier}, {"usd_per_hour", q.usd_per_hour}, {"region", q.region}, {"date", q.date}, {"source", q.source}, {"note", q.note}};
}

json instance_json(const InstanceSpec& i) {
  json prices = json::array();
  for (const auto& q : PriceBook::builtin().quotes(i.name)) prices.push_back(price_json(q));
  return {{"kind", "instance"},
          {"name", i.name},
          {"gpu", i.gpu.name},
          {"gpus_per_node", i.gpus_per_node},
          {"gpu_memory_gib", i.gpu.memory_bytes / (1024.0 * 1024.0 * 1024.0)},
          {"intra_node", {{"kind", i.intra.kind}, {"gbytes_per_s_per_gpu", i.intra.bytes_per_s_per_gpu / 1e9}, {"nvls", i.intra.nvls}}},
          {"network", {{"nics", i.network.nics}, {"gbits_per_nic", i.network.bits_per_s_per_nic / 1e9}, {"fabric", i.network.fabric.name}}},
          {"nccl_tuner", i.nccl_tuner.empty() ? json(nullptr) : json(i.nccl_tuner)},
          {"nccl_proto", i.nccl_proto.empty() ? json(nullptr) : json(i.nccl_proto)},
          {"cpu", i.cpu},
          {"on_demand_usd_per_hour", i.price_usd_per_hour ? json(*i.price_usd_per_hour) : json(nullptr)},
          {"price_note", i.price_note},
          {"prices", prices},
          {"source", i.source}};
}

json gpu_json(const GpuSpec& g) {
  json peaks = json::object();
  for (const auto& [p, f] : g.peak_flops) peaks[to_string(p)] = f / 1e12;
  if (g.peak_fp8_flops > 0) peaks["fp8"] = g.peak_fp8_flops / 1e12;
  return {{"kind", "gpu"},
          {"name", g.name},
          {"memory_gib", g.memory_bytes / (1024.0 * 1024.0 * 1024.0)},
          {"peak_tflops", peaks},
          {"hbm_tbytes_per_s", g.hbm_bytes_per_s / 1e12},
          {"gemm_efficiency", g.gemm_efficiency},
          {"attention_efficiency", g.attention_efficiency},
          {"attention_seq_half_tokens", {{"causal", g.attention_seq_half.causal}, {"full", g.attention_seq_half.full}}},
          {"tdp_w", g.tdp_w},
          {"power_limit_w", effective_power_limit_w(g)},
          {"compute_rate_at_power_limit", power_limited_compute_rate(g)},
          {"power_curve_source", g.power_curve_source},
          {"source", g.source}};
}

json fabric_json(const FabricSpec& f) {
  return {{"kind", "fabric"},
          {"name", f.name},
          {"latency_us", f.latency_s * 1e6},
          {"fixed_latency_us", f.fixed_latency_s * 1e6},
          {"bandwidth_efficiency", f.bandwidth_efficiency},
          {"bandwidth_efficiency_at_scale", f.bandwidth_efficiency_at_scale},
          {"ll128_efficiency", f.ll128_efficiency},
          {"tree_efficiency_at_scale", f.tree_efficiency_at_scale},
          // One GPU's host-staged path to the network (GB/s); null: no such limit.
          {"gpu_path_gbytes_per_s", f.gpu_path_bytes_per_s > 0 ? json(f.gpu_path_bytes_per_s / 1e9) : json(nullptr)},
          {"nccl_net_latency_us", f.nccl_net_latency_s * 1e6},
          {"ramp_min", f.ramp_min},
          {"ramp_half_kib", f.ramp_half_bytes / 1024.0},
          {"sharp", f.sharp},
          // Node counts of the published measurements the terms rest on; null: assumed.
          {"measured_nodes", f.measured_nodes ? json::array({f.measured_nodes->lo, f.measured_nodes->hi}) : json(nullptr)},
          {"source", f.source}};
}

json model_json(const ModelSpec& m) {
  const ParamCounts c = count_params(m);
  return {{"kind", "model"},     {"name", m.name},         {"layers", m.layers},   {"hidden", m.hidden},
          {"heads", m.heads},    {"kv_heads", m.kv_heads}, {"ffn", m.ffn},         {"vocab", m.vocab},
          {"parameters", c.total}, {"source", m.source}};
}

std::string show_text(const json& j) {
  std::string o = fmt::format("{} {}\n", j.at("kind").get<std::string>(), j.at("name").get<std::string>());
  for (const auto& [k, v] : j.items()) {
    if (k == "kind" || k == "name" || k == "prices") continue;
    o += fmt::format("  {:<32} {}\n", k, v.is_string() ? v.get<std::string>() : v.dump());
  }
  if (j.contains("prices")) {
    o += "  prices (USD per hour, whole instance):\n";
    if (j["prices"].empty()) o += "    none known (give one with --price NAME=USD)\n";
    for (const auto& q : j["prices"])
      o += fmt::format("    {:<16} {:>10.3f}  {} {}  {}{}\n", q["tier"].get<std::string>(), q["usd_per_hour"].get<double>(),
                       q["region"].get<std::string>(), q["date"].get<std::string>(), q["source"].get<std::string>(),
                       q["note"].get<std::string>().empty() ? "" : " (" + q["note"].get<std::string>() + ")");
  }
  return o;
}

}  // namespace

Runner add_catalog(CLI::App& app) {
  struct Opts {
    std::string kind = "all", name, json_out;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("catalog", "List or show the instances, GPUs, fabrics, models, frameworks and prices micsim knows");
  cmd->require_subcommand(1);
  CLI::App* list = cmd->add_subcommand("list", "List names (built-in catalog merged with --catalog files)");
  list->add_option("kind", o->kind, "all | instances | gpus | fabrics | models | frameworks | price-tiers")
      ->check(CLI::IsMember({"all", "instances", "gpus", "fabrics", "models", "frameworks", "price-tiers"}));
  list->add_option("--json", o->json_out, "Write the list as JSON to FILE ('-' = stdout)");
  CLI::App* show = cmd->add_subcommand("show", "Show one entry (instance, GPU, fabric or model) with its sources and prices");
  show->add_option("name", o->name, "Name as listed by `micsim catalog list`")->required();
  show->add_option("--json", o->json_out, "Write the entry as JSON to FILE ('-' = stdout)");
  return [o, list]() -> int {
    const auto& cat = HardwareCatalog::builtin();
    OutputPlan outputs;
    outputs.output("--json", o->json_out);
    if (list->parsed()) {
      json j = json::object();
      auto want = [&](const char* k) { return o->kind == "all" || o->kind == k; };
      if (want("instances")) j["instances"] = cat.instance_names();
      if (want("gpus")) j["gpus"] = cat.gpu_names();
      if (want("fabrics")) j["fabrics"] = cat.fabric_names();
      if (want("models")) j["models"] = model_preset_names();
      if (want("frameworks")) j["frameworks"] = framework_names();
      if (want("price-tiers")) j["price_tiers"] = PriceBook::builtin().tiers();
      if (!o->json_out.empty()) {
        write_output_file(o->json_out, json_text(versioned(j, "catalog list")));
      } else {
        std::string text;
        for (const auto& [k, v] : j.items()) {
          text += k + ":\n";
          for (const auto& n : v) text += "  " + n.get<std::string>() + "\n";
        }
        write_stdout(text);
      }
      return 0;
    }
    json j;
    if (const auto* i = cat.find_instance(o->name)) j = instance_json(*i);
    else if (const auto* g = cat.find_gpu(o->name)) j = gpu_json(*g);
    else if (const auto* f = cat.find_fabric(o->name)) j = fabric_json(*f);
    else if (const auto* m = find_model_preset(o->name)) j = model_json(*m);
    else {
      std::vector<std::string> all = cat.instance_names();
      for (const auto& v : {cat.gpu_names(), cat.fabric_names(), model_preset_names()}) all.insert(all.end(), v.begin(), v.end());
      const std::string hint = closest_match(o->name, all);
      throw InputError({"catalog show", 0, 0}, "",
                       fmt::format("unknown name '{}'{}; see `micsim catalog list`", shorten_for_message(o->name),
                                   hint.empty() ? "" : fmt::format(" (did you mean '{}'?)", hint)));
    }
    if (!o->json_out.empty()) write_output_file(o->json_out, json_text(versioned(j, "catalog show")));
    else write_stdout(show_text(j));
    return 0;
  };
}

}  // namespace micsim::cli
