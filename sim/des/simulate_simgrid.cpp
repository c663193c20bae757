#include "sim/des/simulate_simgrid.hpp"

namespace micsim {

SimulationResult simulate_simgrid(const PreparedSimulation& p, const des::DesOptions& opt, des::DesOutcome* details,
                                  const PreparedSimulation** simulated) {
  des::DesOutcome out = des::run_isolated(p, opt);
  SimulationResult r = make_result(p, out.critical, "simgrid");
  const PreparedSimulation* run = &p;
  // Every distinct pipeline stage: contention can make another one the slowest.
  for (const PreparedSimulation& stage : p.other_stages) {
    des::DesOutcome o = des::run_isolated(stage, opt);
    SimulationResult rs = make_result(stage, o.critical, "simgrid");
    if (rs.iteration_time_s > r.iteration_time_s) r = std::move(rs), out = std::move(o), run = &stage;
  }
  if (details) *details = std::move(out);
  if (simulated) *simulated = run;
  return r;
}

}  // namespace micsim
