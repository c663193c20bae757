#pragma once
// Evaluates many variants of one scenario in parallel: each variant is a list of `--set` overrides,
// validated exactly like user input (an invalid combination becomes a row with its reason), then
// simulated with the analytic engine on every core; optionally re-simulated with the SimGrid engine.
// Results come back in variant order, so output never depends on thread timing.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/simulation.hpp"

namespace micsim {

struct Variant {
  std::vector<std::string> overrides;  // "key.path=value"
};

struct Evaluation {
  Variant variant;
  bool valid = false;            // loaded and validated
  std::string reason;            // why not valid, or why it does not fit
  std::string reason_key;        // the scenario key behind the reason (for grouping)
  std::optional<Scenario> scenario;
  SimulationResult analytic;     // when valid (timeline dropped)
  std::optional<SimulationResult> simgrid;
  bool fits() const { return valid && analytic.memory.fits; }
  const SimulationResult& best() const { return simgrid ? *simgrid : analytic; }
};

struct EvaluateOptions {
  int threads = 0;                 // 0 = every core
  std::string progress_label;      // "" = no progress bar
  bool simulate_non_fitting = true;
};

std::vector<Evaluation> evaluate_variants(const std::string& base_yaml, const std::string& base_file,
                                          const std::vector<Variant>& variants, const EvaluateOptions& opt);

// Re-simulates the given evaluations with the SimGrid engine (child processes, up to `parallel` at once).
// `on_refined(i)` runs as soon as evals[i] has its SimGrid result (to save it).
void refine_with_simgrid(const std::vector<Evaluation*>& evals, int parallel, const std::string& progress_label,
                         const std::function<void(size_t)>& on_refined = {});

int default_threads();

// MPI: each rank passes the results it holds, by index (< n); every rank gets all of them, exact to
// the bit (to_exact_json). With one rank it returns its input.
std::map<size_t, SimulationResult> all_gather_results(size_t n, const std::map<size_t, const SimulationResult*>& mine);

}  // namespace micsim
