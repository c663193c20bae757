// build/micsim: the command-line entry point (cli/run.cpp does the work; see it for exit statuses).
// Under mpirun/srun every rank runs the same command; rank 0 alone writes (planner/ranks.hpp).
#include <iostream>

#include "cli/commands.hpp"
#include "models/io/output_file.hpp"
#include "planner/ranks.hpp"

int main(int argc, char** argv) {
  micsim::ranks::init_if_launched(&argc, &argv);
  // Ranks other than 0 compute their share and exchange it, but print and write nothing (their
  // warnings and messages would repeat rank 0's); internal errors still name their rank.
  if (!micsim::ranks::is_root()) {
    micsim::suppress_outputs(true);
    std::cout.rdbuf(nullptr);
    std::cerr.rdbuf(nullptr);
  }
  const int rc = micsim::cli::run(argc, argv);
  micsim::ranks::finalize();
  return rc;
}
