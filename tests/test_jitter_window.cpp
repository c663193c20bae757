// The jitter's window: compute noise that decorrelates within about a second averages out over longer
// micro-steps (jitter_cv_over_window, models/compute/jitter.hpp; calibration key jitter_window_exponent).
// Off by default (exponent 0): fitted on the corpus it did not help held out (docs/model.md sec 2.6).
#include <doctest/doctest.h>

#include <cmath>

#include "helpers.hpp"
#include "models/calibration/calibration.hpp"
#include "models/compute/compute_model.hpp"
#include "models/compute/jitter.hpp"
#include "sim/des/simulate_simgrid.hpp"

using namespace micsim;
using micsim::test::run;
using micsim::test::scenario;

TEST_CASE("jitter window, closed form: CV over T is jitter_cv x (1 s / T)^exponent, flat below 0.1 s, unchanged at exponent 0") {
  // Independent increments (exponent 1/2): a window four times as long has half the CV.
  CHECK(jitter_cv_over_window(0.04, 0.5, 4.0) == rel_approx(0.02).epsilon(1e-12));
  CHECK(jitter_cv_over_window(0.04, 0.5, 1.0) == rel_approx(0.04).epsilon(1e-12));
  CHECK(jitter_cv_over_window(0.04, 0.35, 0.25) == rel_approx(0.04 * std::pow(4.0, 0.35)).epsilon(1e-12));
  // Shorter than the noise's episodes (validation/data/harness-h200-2026-12-04/jitter.csv: CV 4.5 % per 8-ms
  // iteration, 4.3 % over 32 ms, 3.6 % over 96 ms) the CV stops growing: every window below 0.1 s is 0.1 s.
  CHECK(jitter_cv_over_window(0.04, 0.5, 0.001) == rel_approx(0.04 * std::sqrt(10.0)).epsilon(1e-12));
  CHECK(jitter_cv_over_window(0.04, 0.5, 0.05) == jitter_cv_over_window(0.04, 0.5, 0.1));
  // Exponent 0 (the default) and a window the step does not define leave the CV as it is.
  for (double t : {0.01, 1.0, 30.0}) CHECK(jitter_cv_over_window(0.038, 0.0, t) == 0.038);
  CHECK(jitter_cv_over_window(0.038, 0.5, 0.0) == 0.038);
  // Never grows with the window.
  double prev = 1e9;
  for (double t : {0.05, 0.1, 0.3, 1.0, 3.0, 10.0}) {
    const double cv = jitter_cv_over_window(0.04, 0.4, t);
    CHECK(cv <= prev);
    prev = cv;
  }
  CHECK(ComputeCalibration{}.jitter_window_exponent == 0);
}

TEST_CASE("jitter window: a calibration key sets it, longer micro-steps then lose a smaller share, both engines use the same CV") {
  // ZeRO-3 on 8 p4d nodes: every layer's gather meets all 64 ranks.
  Scenario sc = scenario("p4d.24xlarge", 8, "bert-10b", "zero3", 8, 8 * 64);
  sc.calibration.jitter_cv = 0.05;
  const PreparedSimulation flat = prepare_simulation(sc);
  CHECK(effective_jitter_cv(flat) == rel_approx(0.05).epsilon(1e-12));
  CHECK(micro_step_compute_seconds(flat) == rel_approx(flat.step_compute_s).epsilon(1e-12));  // one micro-step

  const Calibration cal = parse_calibration("instance: p4d.24xlarge\ncompute:\n  jitter_cv: 0.05\n  jitter_window_exponent: 0.5\n", "<test>");
  REQUIRE(cal.jitter_window_exponent);
  CHECK(*cal.jitter_window_exponent == rel_approx(0.5));
  CHECK(parse_calibration(cal.to_yaml(), "<again>").jitter_window_exponent.value_or(-1) == rel_approx(0.5));
  CHECK_THROWS_AS(parse_calibration("compute:\n  jitter_window_exponent: 1.5\n", "<bad>"), InputError);
  sc.calibration = cal;
  const PreparedSimulation p = prepare_simulation(sc);
  const double window = micro_step_compute_seconds(p);
  CHECK(window > 1.0);  // ~1.7 s: the CV over it is below the 1-s jitter_cv
  CHECK(effective_jitter_cv(p) == rel_approx(0.05 / std::sqrt(window)).epsilon(1e-9));
  CHECK(analytic_jitter_factor(p) == rel_approx(1 + effective_jitter_cv(p) * expected_max_standard_normal(64)).epsilon(1e-9));

  // Four times the micro-batch: a micro-step about four times as long, so a smaller share lost to the
  // slowest rank; at exponent 0 the share is the same whatever the length.
  Scenario longer = sc;
  longer.training.micro_batch *= 4, longer.training.global_batch *= 4;
  const PreparedSimulation q = prepare_simulation(longer);
  CHECK(micro_step_compute_seconds(q) > 3 * window);
  CHECK(analytic_jitter_factor(q) < analytic_jitter_factor(p));
  Scenario longer_flat = longer;
  longer_flat.calibration.jitter_window_exponent.reset();
  CHECK(analytic_jitter_factor(prepare_simulation(longer_flat)) == rel_approx(analytic_jitter_factor(flat)).epsilon(1e-12));

  // The analytic engine says over what window; SimGrid samples with the same CV, so the two add about the
  // same time over the jitter-free step.
  const auto a = run(sc);
  bool said = false;
  for (const auto& s : a.sources) said = said || (s.find("jitter:") == 0 && s.find("micro-step = jitter_cv") != std::string::npos);
  CHECK(said);
  Scenario quiet = sc;
  quiet.calibration.jitter_cv = 1e-12;
  const double added_analytic = a.iteration_time_s - run(quiet).iteration_time_s;
  const double added_simgrid =
      simulate_simgrid(prepare_simulation(sc)).iteration_time_s - simulate_simgrid(prepare_simulation(quiet)).iteration_time_s;
  CHECK(added_analytic > 0);
  CHECK(added_simgrid == rel_approx(added_analytic).epsilon(0.5));
  // And SimGrid's cost follows the exponent: less added time than at the 1-s CV (the micro-step is longer).
  Scenario flat_sc = sc;
  flat_sc.calibration.jitter_window_exponent.reset();
  const double added_flat = simulate_simgrid(prepare_simulation(flat_sc)).iteration_time_s - simulate_simgrid(prepare_simulation(quiet)).iteration_time_s;
  CHECK(added_simgrid < added_flat);
}

TEST_CASE("jitter window: validate --fit-jitter-window fits it on the corpus only, and says so when given without it") {
  const auto bad = micsim::test::run_cli("validate --fit-jitter-window x.csv");
  CHECK(bad.status == 2);
  CHECK(bad.output.find("--fit-jitter-window") != std::string::npos);
  CHECK(bad.output.find("--corpus") != std::string::npos);
}
