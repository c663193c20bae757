// micsim benchmarks: prints figures, asserts nothing. Run through scripts/bench.
//   micsim_bench analytic    time per scenario of the analytic engine (load, prepare, run)
//   micsim_bench simgrid     the SimGrid engine on 128 to 1,024 GPUs
//   micsim_bench large       scenarios/large: 16,384 GPUs on both engines, time and peak memory
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <sys/resource.h>

#include "sim/des/simulate_simgrid.hpp"
#include "sim/simulation.hpp"

using namespace micsim;
using Clock = std::chrono::steady_clock;

namespace {

// Median of `reps` timings of f, in seconds.
double time_median(int reps, const std::function<void()>& f) {
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto a = Clock::now();
    f();
    t.push_back(std::chrono::duration<double>(Clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

std::string scenario_yaml(const std::string& inst, int nodes, const std::string& model, const std::string& kind,
                          int mb, int64_t gb, int seq, const std::string& extra) {
  return fmt::format(
      "cluster: {{instance: {}, nodes: {}}}\nmodel: {{preset: {}}}\n"
      "training: {{seq_len: {}, micro_batch: {}, global_batch: {}, precision: fp16, activation_checkpointing: true}}\n"
      "strategy: {{kind: {}{}}}\n",
      inst, nodes, model, seq, mb, gb, kind, extra);
}

struct Case {
  std::string label, yaml;
};

int bench_analytic() {
  std::vector<Case> cases = {
      {"bert-10b mics p=8, 16 x p3dn (128 GPUs), 1 micro-step",
       scenario_yaml("p3dn.24xlarge", 16, "bert-10b", "mics", 8, 1024, 512, ", partition_size: 8")},
      {"bert-10b zero3, 16 x p3dn (128 GPUs), 8 micro-steps",
       scenario_yaml("p3dn.24xlarge", 16, "bert-10b", "zero3", 8, 8192, 512, "")},
      {"gpt-175b mics p=128, 64 x p4d (512 GPUs), 4 micro-steps",
       scenario_yaml("p4de.24xlarge", 64, "gpt-175b", "mics", 1, 2048, 2048, ", partition_size: 128")},
      {"llama2-70b zero3, 128 x p5 (1024 GPUs), 2 micro-steps",
       scenario_yaml("p5.48xlarge", 128, "llama2-70b", "zero3", 1, 2048, 4096, "")},
  };
  fmt::print("analytic engine, median of 31 runs per phase (this machine, one core)\n");
  fmt::print("{:<58}{:>8}{:>12}{:>12}{:>12}{:>12}\n", "scenario", "tasks", "load ms", "prepare ms", "run ms", "total ms");
  for (const auto& c : cases) {
    Scenario sc;
    double t_load = time_median(31, [&] { sc = parse_scenario_text(c.yaml, "<bench>"); });
    PreparedSimulation p;
    double t_prep = time_median(31, [&] { p = prepare_simulation(sc); });
    double t_run = time_median(31, [&] { volatile double x = simulate_analytic(p).iteration_time_s; (void)x; });
    fmt::print("{:<58}{:>8}{:>12.3f}{:>12.3f}{:>12.3f}{:>12.3f}\n", c.label, p.graph.size(), 1e3 * t_load, 1e3 * t_prep,
               1e3 * t_run, 1e3 * (t_load + t_prep + t_run));
  }
  return 0;
}

int bench_simgrid() {
  std::vector<Case> cases = {
      {"gpt-100b mics p=8, 64 x p4d (512 GPUs), 4 micro-steps",
       scenario_yaml("p4d.24xlarge", 64, "gpt-100b", "mics", 1, 2048, 2048, ", partition_size: 8, hierarchical_allgather: true")},
      {"gpt-100b mics p=128 hierarchical, 64 x p4d (512 GPUs), 4 micro-steps",
       scenario_yaml("p4d.24xlarge", 64, "gpt-100b", "mics", 1, 2048, 2048, ", partition_size: 128, hierarchical_allgather: true")},
      {"gpt-100b zero3, 128 x p4d (1024 GPUs), 2 micro-steps",
       scenario_yaml("p4d.24xlarge", 128, "gpt-100b", "zero3", 1, 2048, 2048, "")},
      {"bert-10b zero3, 16 x p3dn (128 GPUs), 8 micro-steps",
       scenario_yaml("p3dn.24xlarge", 16, "bert-10b", "zero3", 8, 8192, 512, "")},
  };
  fmt::print("simgrid engine, one training step per case (a single-threaded child process each)\n");
  fmt::print("{:<66}{:>9}{:>10}{:>11}{:>10}{:>11}{:>12}\n", "scenario", "tasks", "flows", "step s", "wall s",
             "peak MiB", "analytic s");
  for (const auto& c : cases) {
    Scenario sc = parse_scenario_text(c.yaml, "<bench>");
    PreparedSimulation p = prepare_simulation(sc);
    des::DesOutcome out;
    SimulationResult r = simulate_simgrid(p, {}, &out);
    double analytic = simulate_analytic(p).iteration_time_s;
    fmt::print("{:<66}{:>9}{:>10}{:>11.3f}{:>10.2f}{:>11.1f}{:>12.3f}\n", c.label, p.graph.size() * size_t(sc.cluster.nodes),
               out.flows, r.iteration_time_s, out.wall_s, out.peak_rss_kib / 1024.0, analytic);
  }
  return 0;
}

// The 16,384-GPU scenario (issue 7): the analytic engine at full size; the SimGrid engine from 512 to
// 16,384 GPUs, as it runs by default (a symmetric cluster as one block of nodes, sim/des/symmetry.hpp)
// and, side by side up to 4,096 GPUs, simulating every node (MICSIM_BENCH_FULL=1: at every size, which
// takes minutes at 16,384 GPUs on a 2-core machine).
int bench_large() {
  const std::string path = std::string(MICSIM_SOURCE_DIR) + "/scenarios/large/gpt-175b-mics-16384-gpus.yaml";
  Scenario sc = load_scenario(path);
  fmt::print("large run: {} ({} GPUs)\n", sc.name, sc.world_size());
  auto a = Clock::now();
  PreparedSimulation p = prepare_simulation(sc);
  const double t_prepare = std::chrono::duration<double>(Clock::now() - a).count();
  double t_analytic = time_median(5, [&] { volatile double x = simulate_analytic(p).iteration_time_s; (void)x; });
  SimulationResult ra = simulate_analytic(p);
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  fmt::print("  analytic, {} GPUs: prepare {:.2f} ms, run {:.3f} ms (median of 5), step {:.3f} s, {:.0f} tokens/s; process peak {:.1f} MiB\n",
             sc.world_size(), 1e3 * t_prepare, 1e3 * t_analytic, ra.iteration_time_s, ra.tokens_per_s, ru.ru_maxrss / 1024.0);
  const char* full = std::getenv("MICSIM_BENCH_FULL");
  const bool every_size = full && std::string(full) == "1";
  fmt::print("  {:<9}{:>7}{:>7}{:>10}{:>10}{:>9}{:>10}{:>10}  {}\n", "simgrid", "GPUs", "nodes", "flows", "events", "wall s",
             "peak MiB", "step s", "vs analytic / vs every node");
  for (int nodes : {64, 128, 256, 512, 1024, 2048}) {
    Scenario s = load_scenario(path, {fmt::format("cluster.nodes={}", nodes), fmt::format("training.global_batch={}", 16 * nodes)});
    PreparedSimulation ps = prepare_simulation(s);
    const double an = simulate_analytic(ps).iteration_time_s;
    des::DesOptions block, every_node;
    every_node.use_symmetry = false;
    des::DesOutcome ob;
    const double tb = simulate_simgrid(ps, block, &ob).iteration_time_s;
    auto row = [&](const char* how, const des::DesOutcome& o, double t, const std::string& note) {
      fmt::print("  {:<9}{:>7}{:>7}{:>10}{:>10}{:>9.2f}{:>10.1f}{:>10.3f}  {:+.2f} %{}\n", how, s.world_size(), o.simulated_nodes, o.flows,
                 o.events, o.wall_s, o.peak_rss_kib / 1024.0, t, 100 * (t / an - 1), note);
    };
    if (nodes > 512 && !every_size) {
      row("block", ob, tb, "");
      continue;
    }
    des::DesOutcome of;
    const double tf = simulate_simgrid(ps, every_node, &of).iteration_time_s;
    row("block", ob, tb, fmt::format(" / {:+.3f} %; {:.0f}x faster", 100 * (tb / tf - 1), of.wall_s / std::max(1e-9, ob.wall_s)));
    row("every", of, tf, "");
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string what = argc > 1 ? argv[1] : "all";
  int rc = 0;
  if (what == "analytic" || what == "all") rc |= bench_analytic();
  if (what == "simgrid" || what == "all") rc |= bench_simgrid();
  if (what == "large") rc |= bench_large();
  if (what != "analytic" && what != "simgrid" && what != "all" && what != "large") {
    fmt::print(stderr, "usage: micsim_bench [analytic|simgrid|all|large]\n");
    return 2;
  }
  return rc;
}
