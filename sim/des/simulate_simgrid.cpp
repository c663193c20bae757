#include "sim/des/simulate_simgrid.hpp"

namespace micsim {

SimulationResult simulate_simgrid(const PreparedSimulation& p, bool all_timelines, des::DesOutcome* details) {
  des::DesOptions opt;
  opt.keep_all_timelines = all_timelines;
  des::DesOutcome out = des::run_isolated(p, opt);
  SimulationResult r = make_result(p, out.critical, "simgrid");
  if (details) *details = std::move(out);
  return r;
}

}  // namespace micsim
