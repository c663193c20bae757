// micsim plan SCENARIO [--set key=value]... [--top K] [--refine K] [--csv FILE] [--json FILE] ...
// The search space comes from the scenario's `plan:` block; flags override it.
#include <fmt/format.h>

#include <iostream>
#include <sstream>

#include "models/io/input_file.hpp"
#include "models/hardware/prices.hpp"
#include "planner/handoff/handoff.hpp"
#include "planner/plan.hpp"
#include "cli/commands.hpp"
#include "models/io/json_text.hpp"
#include "sim/report/report.hpp"

namespace micsim::cli {

namespace {
std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}
std::vector<int> ints(const std::string& flag, const std::string& s) {
  std::vector<int> out;
  for (const auto& x : split_commas(s)) {
    char* end = nullptr;
    long v = std::strtol(x.c_str(), &end, 10);
    if (*end != '\0' || v < 1 || v > (1 << 20)) throw InputError({flag + " " + s, 0, 0}, "", "expected comma-separated positive integers");
    out.push_back(int(v));
  }
  if (out.empty()) throw InputError({flag, 0, 0}, "", "expected at least one value");
  return out;
}
}  // namespace

Runner add_plan(CLI::App& app) {
  struct Opts {
    std::string scenario, csv, json, objective, instances, nodes, strategies, micro_batches, deepspeed, ds_out, fsdp_out, handoff_dir, checkpoint;
    int64_t stop_after = 0;
    std::vector<std::string> sets, prices;
    std::string price_tier;
    double max_days = 0, max_usd_total = 0;
    int top = 0, refine = -1, max_nodes = 0, threads = 0;
    double target_tokens = 0, max_usd = 0;
    bool quiet = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("plan", "Search instance type, node count, strategy, partition size and batch layout");
  cmd->add_option("scenario", o->scenario, "Scenario YAML file (its plan: block sets the search space)")->required();
  cmd->add_option("--set", o->sets, "Override a scenario key (repeatable)");
  cmd->add_option("--top", o->top, "Rows to show (default: plan.top or 10)")->check(CLI::Range(1, 1000000));
  cmd->add_option("--refine", o->refine, "Top candidates re-simulated with SimGrid (default: plan.refine or 20; 0 = none)")
      ->check(CLI::Range(0, 1000000));
  cmd->add_option("--objective", o->objective, "throughput | time | cost | cost-within-deadline (cheapest that meets --max-days)")
      ->check(CLI::IsMember({"throughput", "time", "cost", "cost-within-deadline"}));
  cmd->add_option("--max-days", o->max_days, "Deadline: days to train --target-tokens")->check(CLI::Range(1e-3, 1e5));
  cmd->add_option("--max-usd", o->max_usd_total, "Budget: dollars to train --target-tokens (whole cluster)")->check(CLI::Range(0.01, 1e15));
  cmd->add_option("--price", o->prices, "INSTANCE=USD_PER_HOUR for one instance (repeatable; overrides the price book and plan.prices)");
  cmd->add_option("--price-tier", o->price_tier, "Which quotes of the price book: on_demand (default), spot, capacity_block, reserved, ...")
      ->check(CLI::IsMember(PriceBook::tier_names()));
  cmd->add_option("--target-tokens", o->target_tokens, "Tokens to train (time and cost objectives)")->check(CLI::Range(1.0, 1e18));
  cmd->add_option("--instances", o->instances, "Comma-separated instance types");
  cmd->add_option("--nodes", o->nodes, "Comma-separated node counts");
  cmd->add_option("--strategies", o->strategies, "Comma-separated: ddp, zero1, zero2, zero3 (= fsdp), mics, hsdp");
  cmd->add_option("--micro-batches", o->micro_batches, "Comma-separated micro-batch sizes");
  cmd->add_option("--max-nodes", o->max_nodes, "Largest cluster allowed")->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--max-usd-per-hour", o->max_usd, "Largest cluster price allowed ($/h)")->check(CLI::Range(0.01, 1e9));
  cmd->add_option("--threads", o->threads, "Worker threads (default: every core)")->check(CLI::Range(0, 1024));
  cmd->add_option("--deepspeed", o->deepspeed, "An existing ds_config.json: simulate it as the baseline");
  cmd->add_option("--deepspeed-out", o->ds_out, "Write the winner's DeepSpeed config (ds_config.json) to FILE");
  cmd->add_option("--fsdp-out", o->fsdp_out, "Write the winner's FSDP2 training script (train_fsdp2.py) to FILE");
  cmd->add_option("--handoff-dir", o->handoff_dir,
                  "Write every hand-off for the winner into DIR: ds_config.json, train_fsdp2.py, torchtitan.toml, accelerate.yaml, HANDOFF.md");
  cmd->add_option("--csv", o->csv, "Write the ranking as CSV to FILE");
  cmd->add_option("--json", o->json, "Write the plan as JSON to FILE ('-' = stdout)");
  cmd->add_option("--checkpoint", o->checkpoint, "Save progress to FILE; a killed plan run again with it resumes where it stopped");
  cmd->add_option("--stop-after", o->stop_after, "Run at most N new SimGrid refinements, then stop with exit 3 (resumable with --checkpoint)")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 40));
  cmd->add_flag("--quiet,-q", o->quiet, "Do not print the plan");
  return [o]() -> int {
    const std::string text = read_whole_file(o->scenario);
    PlanSpec spec = read_plan_block(o->scenario, text, o->sets);
    if (o->top > 0) spec.top = o->top;
    if (o->refine >= 0) spec.refine = o->refine;
    if (!o->objective.empty()) spec.objective = *parse_objective(o->objective);
    if (o->target_tokens > 0) spec.target_tokens = o->target_tokens;
    if (o->max_days > 0) spec.max_days = o->max_days;
    if (o->max_usd_total > 0) spec.max_usd = o->max_usd_total;
    if (!o->price_tier.empty()) spec.price_tier = o->price_tier;
    for (const auto& p : o->prices) {
      const auto eq = p.find('=');
      const std::string where = "--price " + shorten_for_message(p);
      if (eq == std::string::npos) throw InputError({where, 0, 0}, "", "expected INSTANCE=USD_PER_HOUR, e.g. p5.48xlarge=40");
      const std::string name = lookup_instance("--price", p.substr(0, eq)).name;
      const std::string value = p.substr(eq + 1);
      char* end = nullptr;
      const double usd = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0' || !(usd >= 0 && usd <= 1e6))
        throw InputError({where, 0, 0}, "", "expected a price in USD per hour between 0 and 1e6 after '='");
      spec.prices[name] = usd;
      spec.price_origin[name] = "--price";
    }
    check_plan_spec(spec, [](const std::string& key, const std::string& why) {
      throw InputError({"plan options", 0, 0}, key, why + " (flags: --objective, --target-tokens, --max-days, --max-usd)");
    });
    if (!o->instances.empty()) {
      spec.instances.clear();
      for (const auto& i : split_commas(o->instances)) spec.instances.push_back(lookup_instance("--instances", i).name);
    }
    if (!o->nodes.empty()) spec.nodes = ints("--nodes", o->nodes);
    if (!o->strategies.empty()) {
      spec.strategies.clear();
      for (const auto& s : split_commas(o->strategies)) {
        if (s != "fsdp" && !parse_strategy_kind(s)) throw InputError({"--strategies " + o->strategies, 0, 0}, "", "unknown strategy '" + s + "'");
        spec.strategies.push_back(s);
      }
    }
    if (!o->micro_batches.empty()) spec.micro_batches = ints("--micro-batches", o->micro_batches);
    if (o->max_nodes > 0) spec.max_nodes = o->max_nodes;
    if (o->max_usd > 0) spec.max_usd_per_hour = o->max_usd;
    spec.threads = o->threads;
    spec.checkpoint = o->checkpoint;
    spec.stop_after = static_cast<size_t>(o->stop_after);
    if (o->stop_after > 0 && o->checkpoint.empty())
      throw InputError({"--stop-after", 0, 0}, "", "--stop-after needs --checkpoint FILE (to resume from)");
    std::vector<std::string> base = o->sets;
    std::optional<SimulationResult> baseline;
    std::vector<std::string> inputs = {o->scenario, o->deepspeed};
    {
      Scenario sc0 = parse_scenario_text(text, o->scenario, base);
      inputs.insert(inputs.end(), sc0.input_files.begin(), sc0.input_files.end());
      if (!o->deepspeed.empty()) {
        auto ds = read_deepspeed_config(o->deepspeed, sc0.world_size());
        // Validated here with each value's ds_config line as its origin; the search then takes them as overrides.
        Scenario scd = parse_scenario_text(text, o->scenario, base, ds.overrides);
        for (const auto& ov : ds.overrides) base.push_back(ov.assignment);
        baseline = simulate_analytic(prepare_simulation(scd));
      }
    }
    // Every output is checked before the search starts.
    OutputPlan outputs;
    for (const auto& f : inputs) outputs.input(f);
    outputs.output("--csv", o->csv);
    outputs.output("--json", o->json);
    outputs.output("--deepspeed-out", o->ds_out);
    outputs.output("--fsdp-out", o->fsdp_out);
    const auto handoff_paths = handoff_outputs(outputs, o->handoff_dir);
    outputs.read_write("--checkpoint", o->checkpoint);
    if (o->checkpoint == "-") throw InputError({"--checkpoint -", 0, 0}, "", "a checkpoint must be a file");
    PlanResult r;
    try {
      r = run_plan(o->scenario, base, spec);
    } catch (const PlanStopped& s) {
      std::cerr << "micsim plan: " << s.what() << "\n";
      return 3;
    }
    std::cerr << fmt::format("micsim plan: {} configurations with the analytic engine in {:.2f} s ({:.0f} per second); "
                             "SimGrid refinement of the top {} in {:.2f} s\n",
                             r.evaluated, r.analytic_wall_s, r.evaluated / std::max(1e-9, r.analytic_wall_s),
                             std::min<size_t>(r.spec.refine, r.ranking.size()), r.simgrid_wall_s);
    std::string text_out = format_plan(r);
    if (baseline && !r.ranking.empty()) {
      const auto& w = r.ranking.front().eval->best();
      text_out += fmt::format("\n  Your DeepSpeed config ({}): {} per step, {:.2f} samples/s{}; the winner is {:.2f}x its throughput.\n",
                              o->deepspeed, human_seconds(baseline->iteration_time_s), baseline->samples_per_s,
                              baseline->memory.fits ? "" : " (DOES NOT FIT in GPU memory)", w.samples_per_s / baseline->samples_per_s);
    }
    if (!o->csv.empty()) write_output_file(o->csv, plan_csv(r));
    for (const auto& f : r.handoffs) {
      if (f.name == "ds_config.json" && !o->ds_out.empty()) write_output_file(o->ds_out, f.text);
      if (f.name == "train_fsdp2.py" && !o->fsdp_out.empty()) write_output_file(o->fsdp_out, f.text);
    }
    if (!r.ranking.empty() && !o->ds_out.empty() &&
        std::none_of(r.handoffs.begin(), r.handoffs.end(), [](const HandoffFile& f) { return f.name == "ds_config.json"; }))
      std::cerr << "micsim plan: no --deepspeed-out written: the winner (" << to_string(r.ranking.front().eval->scenario->strategy.kind)
                << ") has no DeepSpeed equivalent (see HANDOFF.md)\n";
    write_handoffs(handoff_paths, r.handoffs);
    if (!o->json.empty()) {
      auto j = plan_json(r);
      if (baseline) j["baseline"] = to_json(*baseline);
      write_output_file(o->json, json_text(versioned(j, "plan")));
    }
    const bool stdout_taken = o->json == "-" || o->csv == "-" || o->ds_out == "-" || o->fsdp_out == "-";
    if (!o->quiet && !stdout_taken) write_stdout(text_out);
    if (r.ranking.empty()) {
      // Exit 4: the search ran, but no configuration fits (the explanation names the nearest miss).
      if (o->quiet || stdout_taken) std::cerr << "micsim plan: " << r.explanation;
      return 4;
    }
    return 0;
  };
}

}  // namespace micsim::cli
