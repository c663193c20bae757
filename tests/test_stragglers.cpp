// Stragglers: rare long stalls of a GPU (models/compute/stragglers.hpp), their closed form, the two
// engines, the calibration keys that set them, and that micsim's defaults leave them off.
#include <doctest/doctest.h>

#include <cmath>

#include "helpers.hpp"
#include "models/calibration/calibration.hpp"
#include "models/compute/stragglers.hpp"
#include "sim/des/simulate_simgrid.hpp"

using namespace micsim;
using micsim::test::run;
using micsim::test::scenario;

TEST_CASE("stragglers, closed form: rare stalls cost rate x stall x (N - 1), frequent ones one stall per interval, none for one rank") {
  CHECK(straggler_slowdown(0, 0.2, 512, 512, 1.0, 100) == 0);
  CHECK(straggler_slowdown(1e-3, 0, 512, 512, 1.0, 100) == 0);
  CHECK(straggler_slowdown(1e-3, 0.2, 1, 1, 1.0, 100) == rel_approx(0).epsilon(1e-12));  // its own stalls are in its compute
  // Rare: each stall anywhere delays everyone once, so the step grows by rate·stall·(N - 1) of its compute.
  CHECK(straggler_slowdown(1e-4, 0.2, 512, 512, 1.0, 100) == rel_approx(1e-4 * 0.2 * 511).epsilon(0.01));
  // Frequent, few synchronisations: every interval meets a stall, so the step grows by intervals x stall
  // (2 x 0.2 s of 10 s), less the rank's own.
  const double own = 2 * -std::expm1(-0.01 * 10 / 2);
  CHECK(straggler_slowdown(0.01, 0.2, 1000, 1000, 10.0, 2) == rel_approx(0.2 * (2 - own) / 10).epsilon(1e-6));
  CHECK(straggler_slowdown(0.01, 0.2, 1000, 1000, 10.0, 2) <= 2 * 0.2 / 10);
  // More ranks, never less waiting; a longer step between the same synchronisations, a smaller share.
  double prev = 0;
  for (int n : {2, 8, 64, 512, 4096}) {
    const double s = straggler_slowdown(5e-4, 0.25, n, n, 1.2, 96);
    CHECK(s > prev);
    prev = s;
  }
  CHECK(straggler_slowdown(1e-2, 0.25, 512, 512, 10.0, 4) < straggler_slowdown(1e-2, 0.25, 512, 512, 1.0, 4));
  // Groups of 8 that meet the world once per step still wait for the world's stalls at the step's end.
  const double grouped = straggler_slowdown(1e-3, 0.2, 8, 1024, 2.0, 1000);
  CHECK(grouped == rel_approx(0.2 * (-std::expm1(-1e-3 * 1024 * 2.0) - 1000 * -std::expm1(-1e-3 * 2.0 / 1000)) / 2.0).epsilon(1e-6));
  CHECK(grouped > straggler_slowdown(1e-3, 0.2, 8, 8, 2.0, 1000));
}

TEST_CASE("stragglers: off by default, set by calibration keys, they stretch both engines' compute alike and say so") {
  // ZeRO-3 on 8 p4d nodes: every layer's gather is a synchronisation among all 64 ranks.
  Scenario sc = scenario("p4d.24xlarge", 8, "bert-10b", "zero3", 8, 8 * 64);
  const PreparedSimulation quiet = prepare_simulation(sc);
  CHECK(straggler_factor(quiet) == 0);
  // A gather waited for before every block's forward and before most blocks' backward.
  CHECK(quiet.sync_points > 127 + 100);
  CHECK(quiet.sync_points < 3 * 127);
  CHECK(quiet.step_compute_s > 0);
  const Calibration cal = parse_calibration("instance: p4d.24xlarge\ncompute:\n  straggler_stalls_per_gpu_hour: 36\n  straggler_stall_ms: 200\n",
                                            "<test>");
  CHECK(cal.straggler_rate_per_s == rel_approx(0.01));
  CHECK(cal.straggler_stall_s == rel_approx(0.2));
  CHECK(parse_calibration(cal.to_yaml(), "<again>").straggler_rate_per_s == rel_approx(0.01));
  CHECK_THROWS_AS(parse_calibration("compute:\n  straggler_stall_ms: -5\n", "<bad>"), InputError);
  sc.calibration = cal;
  const PreparedSimulation p = prepare_simulation(sc);
  const double f = straggler_factor(p);
  CHECK(f == rel_approx(straggler_slowdown(0.01, 0.2, 64, 64, p.step_compute_s, p.sync_points)));
  CHECK(f > 0.01);
  Scenario calm = sc;
  calm.calibration.straggler_rate_per_s.reset();
  calm.calibration.straggler_stall_s.reset();
  const auto a = run(sc), a0 = run(calm);
  // The analytic engine stretches compute by f; what communication hides of it is absorbed.
  CHECK(a.iteration_time_s > a0.iteration_time_s);
  CHECK(a.iteration_time_s - a0.iteration_time_s <= f * a0.compute_s * (1 + 1e-9));
  bool said = false;
  for (const auto& s : a.sources) said = said || s.find("stragglers:") == 0;
  CHECK(said);
  // SimGrid: the same expected stretch on every node, so the same added time (within its own timeline's slack).
  const double s1 = simulate_simgrid(prepare_simulation(sc)).iteration_time_s, s0 = simulate_simgrid(prepare_simulation(calm)).iteration_time_s;
  CHECK(s1 - s0 == rel_approx(a.iteration_time_s - a0.iteration_time_s).epsilon(0.25));
}

TEST_CASE("stragglers: validate --fit-stragglers fits them on the corpus only, and says so when given without it") {
  const auto bad = micsim::test::run_cli("validate --fit-stragglers x.csv");
  CHECK(bad.status == 2);
  CHECK(bad.output.find("--fit-stragglers") != std::string::npos);
  CHECK(bad.output.find("--corpus") != std::string::npos);
}
