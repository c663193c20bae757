#include "planner/sweep.hpp"

#include <fmt/format.h>

#include <chrono>
#include <map>
#include <sstream>

#include "models/io/input_file.hpp"
#include "sim/report/report.hpp"

namespace micsim {

std::pair<std::string, std::vector<std::string>> parse_vary(const std::string& text) {
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 >= text.size())
    throw InputError({"--vary " + text, 0, 0}, "", "expected --vary key.path=v1,v2,...");
  std::vector<std::string> values;
  std::stringstream ss(text.substr(eq + 1));
  std::string v;
  while (std::getline(ss, v, ','))
    if (!v.empty()) values.push_back(v);
  if (values.empty()) throw InputError({"--vary " + text, 0, 0}, text.substr(0, eq), "expected at least one value");
  return {text.substr(0, eq), values};
}

SweepResult run_sweep(const std::string& path, const std::vector<std::string>& base_overrides, const SweepSpec& spec) {
  SweepResult res;
  res.spec = spec;
  const std::string text = read_whole_file(path);
  Scenario base = parse_scenario_text(text, path, base_overrides);
  std::vector<std::string> mode_overrides;
  if (spec.mode == ScalingMode::Weak) {
    // Per-GPU batch and accumulation as in the scenario; the global batch follows the GPU count.
    mode_overrides = {"training.global_batch=null",
                      fmt::format("training.grad_accumulation_steps={}", base.grad_accumulation_steps())};
  } else if (spec.mode == ScalingMode::Strong) {
    mode_overrides = {"training.grad_accumulation_steps=null", fmt::format("training.global_batch={}", base.training.global_batch)};
  }
  // Cartesian product, first key outermost.
  std::vector<std::vector<std::string>> combos = {{}};
  for (const auto& [key, values] : spec.vary) {
    std::vector<std::vector<std::string>> next;
    for (const auto& c : combos)
      for (const auto& v : values) {
        auto x = c;
        x.push_back(v);
        next.push_back(x);
      }
    combos = next;
  }
  std::vector<Variant> variants;
  for (const auto& c : combos) {
    Variant v;
    v.overrides = base_overrides;
    v.overrides.insert(v.overrides.end(), mode_overrides.begin(), mode_overrides.end());
    for (size_t k = 0; k < c.size(); ++k) v.overrides.push_back(spec.vary[k].first + "=" + c[k]);
    variants.push_back(v);
  }
  auto t0 = std::chrono::steady_clock::now();
  EvaluateOptions eo;
  eo.threads = spec.threads;
  eo.progress_label = spec.progress ? "sweep: analytic" : "";
  eo.simulate_non_fitting = true;
  res.evaluations = evaluate_variants(text, path, variants, eo);
  if (spec.engine == EngineKind::SimGrid) {
    std::vector<Evaluation*> valid;
    for (auto& e : res.evaluations)
      if (e.valid) valid.push_back(&e);
    refine_with_simgrid(valid, spec.threads > 0 ? spec.threads : default_threads(), spec.progress ? "sweep: simgrid" : "");
  }
  res.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  for (size_t i = 0; i < combos.size(); ++i) {
    SweepRow row;
    row.values = combos[i];
    row.eval = &res.evaluations[i];
    row.status = !row.eval->valid ? row.eval->reason_key + ": " + row.eval->reason
                 : !row.eval->fits() ? "does not fit in GPU memory" : "ok";
    res.rows.push_back(row);
  }
  // Scaling efficiency within each series (all varied values equal except cluster.nodes).
  int nodes_key = -1, kind_key = -1;
  for (size_t k = 0; k < spec.vary.size(); ++k) {
    if (spec.vary[k].first == "cluster.nodes") nodes_key = int(k);
    if (spec.vary[k].first == "strategy.kind") kind_key = int(k);
  }
  auto series_of = [&](const SweepRow& r, int skip) {
    std::string s;
    for (size_t k = 0; k < r.values.size(); ++k)
      if (int(k) != skip) s += r.values[k] + "\x1f";
    return s;
  };
  std::map<std::string, const SweepRow*> reference;
  for (const auto& r : res.rows) {
    if (r.status != "ok") continue;
    auto& ref = reference[series_of(r, nodes_key)];
    if (!ref || r.eval->best().world_size < ref->eval->best().world_size) ref = &r;
  }
  for (auto& r : res.rows) {
    if (r.status != "ok") continue;
    const SweepRow* ref = reference[series_of(r, nodes_key)];
    const auto &x = r.eval->best(), &y = ref->eval->best();
    r.scaling_efficiency = (x.samples_per_s / x.world_size) / (y.samples_per_s / y.world_size);
  }
  // Throughput relative to the first strategy listed, at equal GPUs and other settings.
  if (kind_key >= 0) {
    const std::string first = spec.vary[kind_key].second.front();
    std::map<std::string, const SweepRow*> base_rows;
    for (const auto& r : res.rows)
      if (r.status == "ok" && r.values[kind_key] == first) base_rows[series_of(r, kind_key)] = &r;
    for (auto& r : res.rows) {
      if (r.status != "ok") continue;
      auto it = base_rows.find(series_of(r, kind_key));
      if (it == base_rows.end()) continue;
      r.ratio = r.eval->best().samples_per_s / it->second->eval->best().samples_per_s;
      r.ratio_to = first;
    }
  }
  return res;
}

std::string format_sweep(const SweepResult& r) {
  std::string o;
  const char* mode = r.spec.mode == ScalingMode::Weak ? "weak scaling (per-GPU batch and accumulation fixed)"
                     : r.spec.mode == ScalingMode::Strong ? "strong scaling (global batch fixed)"
                                                          : "batch as given";
  o += fmt::format("micsim sweep: {} configurations, {}, engine {}\n\n", r.rows.size(), mode,
                   r.spec.engine == EngineKind::Analytic ? "analytic" : "simgrid");
  std::string head;
  for (const auto& [key, vals] : r.spec.vary) head += fmt::format("{:<{}}", key.substr(key.rfind('.') + 1), std::max<size_t>(10, key.size() - key.rfind('.')));
  o += " " + head + fmt::format("{:>6}{:>8}{:>5}{:>11}{:>11}{:>12}{:>8}{:>7}{:>8}{:>9}  {}\n", "GPUs", "batch", "acc", "step",
                                "samples/s", "tokens/s", "TFLOPS", "MFU", "scaling", "ratio", "status");
  for (const auto& row : r.rows) {
    std::string vals;
    for (size_t k = 0; k < row.values.size(); ++k) {
      const auto& key = r.spec.vary[k].first;
      vals += fmt::format("{:<{}}", row.values[k], std::max<size_t>(10, key.size() - key.rfind('.')));
    }
    if (row.status != "ok" && !row.eval->valid) {
      o += " " + vals + fmt::format("{:>6}{:>8}{:>5}{:>11}{:>11}{:>12}{:>8}{:>7}{:>8}{:>9}  {}\n", "-", "-", "-", "-", "-", "-", "-",
                                    "-", "-", "-", row.status);
      continue;
    }
    const auto& x = row.eval->best();
    o += " " + vals + fmt::format("{:>6}{:>8}{:>5}{:>11}{:>11.2f}{:>12.0f}{:>8.1f}{:>6.1f}%{:>8}{:>9}  {}\n", x.world_size, x.global_batch,
                                  x.grad_accumulation_steps, human_seconds(x.iteration_time_s), x.samples_per_s, x.tokens_per_s,
                                  x.tflops_per_gpu, 100 * x.mfu,
                                  row.scaling_efficiency ? fmt::format("{:.1f}%", 100 * *row.scaling_efficiency) : "-",
                                  row.ratio ? fmt::format("{:.2f}x", *row.ratio) : "-", row.status);
  }
  if (!r.rows.empty() && r.rows.front().ratio) o += fmt::format("\n ratio: samples/s over {}'s at equal GPUs and settings\n", r.rows.front().ratio_to);
  o += " scaling: per-GPU throughput relative to the smallest GPU count of the same series\n";
  return o;
}

std::string sweep_csv(const SweepResult& r) {
  std::string o;
  for (const auto& [key, vals] : r.spec.vary) o += key + ",";
  o += "gpus,global_batch,grad_accumulation_steps,iteration_time_s,samples_per_s,tokens_per_s,tflops_per_gpu,mfu,"
       "fits_in_memory,peak_bytes_per_gpu,scaling_efficiency,ratio,ratio_to,engine,status\n";
  auto csv_field = [](const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  for (const auto& row : r.rows) {
    for (const auto& v : row.values) o += csv_field(v) + ",";
    if (!row.eval->valid) {
      o += ",,,,,,,,,,,,,," + csv_field(row.status) + "\n";
      continue;
    }
    const auto& x = row.eval->best();
    o += fmt::format("{},{},{},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{},{:.9g},{},{},{},{},{}\n", x.world_size, x.global_batch,
                     x.grad_accumulation_steps, x.iteration_time_s, x.samples_per_s, x.tokens_per_s, x.tflops_per_gpu, x.mfu,
                     x.memory.fits ? "true" : "false", x.memory.peak_bytes,
                     row.scaling_efficiency ? fmt::format("{:.9g}", *row.scaling_efficiency) : "",
                     row.ratio ? fmt::format("{:.9g}", *row.ratio) : "", row.ratio_to, x.engine, csv_field(row.status));
  }
  return o;
}

nlohmann::json sweep_json(const SweepResult& r) {
  using nlohmann::json;
  json j;
  json vary = json::object();
  for (const auto& [k, v] : r.spec.vary) vary[k] = v;
  j["vary"] = vary;
  j["mode"] = r.spec.mode == ScalingMode::Weak ? "weak" : r.spec.mode == ScalingMode::Strong ? "strong" : "as_given";
  json rows = json::array();
  for (const auto& row : r.rows) {
    json x;
    json values = json::object();
    for (size_t k = 0; k < row.values.size(); ++k) values[r.spec.vary[k].first] = row.values[k];
    x["values"] = values;
    x["status"] = row.status;
    if (row.eval->valid) {
      json res = to_json(row.eval->best());
      res.erase("sources");
      res.erase("warnings");
      res.erase("collectives");
      x["result"] = res;
    }
    x["scaling_efficiency"] = row.scaling_efficiency ? json(*row.scaling_efficiency) : json(nullptr);
    x["ratio"] = row.ratio ? json(*row.ratio) : json(nullptr);
    x["ratio_to"] = row.ratio_to;
    rows.push_back(x);
  }
  j["rows"] = rows;
  return j;
}

}  // namespace micsim
