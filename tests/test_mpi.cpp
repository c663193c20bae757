// Plans and sweeps spread over MPI ranks (planner/ranks.hpp) give exactly the bytes of one process.
// Runs the real binary under mpirun with 3 ranks on this machine; skips (saying why) where micsim was
// built without MPI, mpirun is absent, or the build is instrumented (Open MPI is not).
#include <doctest/doctest.h>

#include <string>

#include "helpers.hpp"
#include "planner/ranks.hpp"

using namespace micsim;
using namespace micsim::test;

namespace {

const char* kScenario = R"(cluster: {instance: p3dn.24xlarge, nodes: 16}
model: {preset: bert-10b}
training: {seq_len: 512, micro_batch: 8, global_batch: 8192, precision: fp16, activation_checkpointing: true}
strategy: {kind: mics, partition_size: 8}
)";

// mpirun as root (CI), more ranks than cores, shared memory without cross-process copies (containers).
std::string mpirun(int ranks) {
  return "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe -np " + std::to_string(ranks) +
         " --mca btl self,vader --mca btl_vader_single_copy_mechanism none " + MICSIM_BINARY + " ";
}

// The scenario as s.yaml in `dir`; returns its path.
std::string scenario_in(const std::string& dir) {
  const std::string path = dir + "/s.yaml";
  FILE* f = std::fopen(path.c_str(), "w");
  std::fputs(kScenario, f);
  std::fclose(f);
  return path;
}

bool mpi_available() {
#ifdef MICSIM_SANITIZED
  MESSAGE("skipped: an instrumented build (Open MPI itself is not instrumented and reports its own allocations)");
  return false;
#endif
  if (!ranks::built_with_mpi()) {
    MESSAGE("skipped: micsim was built without MPI (install libopenmpi-dev)");
    return false;
  }
  if (run_shell("command -v mpirun >/dev/null 2>&1").status != 0) {
    MESSAGE("skipped: no mpirun on this machine (install openmpi-bin)");
    return false;
  }
  // A machine where Open MPI cannot start two local ranks at all (some containers) is not a
  // failure of micsim: say so loudly, with Open MPI's own message.
  Cmd probe = run_shell(mpirun(2) + "--version 2>&1");
  if (probe.status != 0) {
    MESSAGE("SKIPPED: mpirun is installed but cannot start 2 local ranks here:\n" << probe.output);
    return false;
  }
  return true;
}

}  // namespace

TEST_CASE("MPI: a plan over 3 ranks writes the bytes of a plan in one process") {
  if (!mpi_available()) return;
  const std::string dir = temp_dir("mpi"), s = scenario_in(dir);
  const std::string args = "plan " + s + " --nodes 2,4,8,16 --micro-batches 4,8 --refine 5 --csv ";
  Cmd one = run_shell(std::string(MICSIM_BINARY) + " " + args + dir + "/one.csv --json " + dir + "/one.json 2>/dev/null");
  Cmd three = run_shell(mpirun(3) + args + dir + "/three.csv --json " + dir + "/three.json 2>/dev/null");
  REQUIRE(one.status == 0);
  REQUIRE(three.status == 0);
  CHECK(!one.output.empty());
  CHECK(three.output == one.output);  // the printed plan, once (rank 0's)
  const std::string j1 = read_text(dir + "/one.json"), j3 = read_text(dir + "/three.json");
  REQUIRE(j1.find("\"engine\": \"simgrid\"") != std::string::npos);  // SimGrid results crossed ranks
  CHECK(j3 == j1);
  CHECK(read_text(dir + "/three.csv") == read_text(dir + "/one.csv"));
  // Resuming a checkpoint made by 3 ranks in one process gives the same plan again.
  Cmd stopped = run_shell(mpirun(3) + args + dir + "/x.csv --stop-after 2 --checkpoint " + dir + "/ck -q 2>&1");
  CHECK(stopped.status == 3);
  Cmd resumed = run_shell(std::string(MICSIM_BINARY) + " " + args + dir + "/r.csv --json " + dir + "/r.json --checkpoint " + dir +
                          "/ck -q 2>/dev/null");
  CHECK(resumed.status == 0);
  CHECK(read_text(dir + "/r.json") == j1);
  run_shell("rm -rf " + dir);
}

TEST_CASE("MPI: a SimGrid sweep over 3 ranks gives one process's rows, errors are reported once") {
  if (!mpi_available()) return;
  const std::string dir = temp_dir("mpi-sweep"), s = scenario_in(dir);
  const std::string args = "sweep " + s + " --vary cluster.nodes=2,4,8 --vary strategy.partition_size=8,16 --engine simgrid --json ";
  Cmd one = run_shell(std::string(MICSIM_BINARY) + " " + args + dir + "/one.json -q 2>/dev/null");
  Cmd three = run_shell(mpirun(3) + args + dir + "/three.json -q 2>/dev/null");
  REQUIRE(one.status == 0);
  REQUIRE(three.status == 0);
  const std::string j1 = read_text(dir + "/one.json");
  CHECK(j1.find("\"engine\": \"simgrid\"") != std::string::npos);
  CHECK(read_text(dir + "/three.json") == j1);
  // A bad value is the same error on every rank: exit status 2, said once.
  Cmd bad = run_shell(mpirun(3) + "plan " + s + " --set strategy.partition_size=7 2>&1");
  CHECK(bad.status == 2);
  size_t said = 0;
  for (size_t p = bad.output.find("micsim: error:"); p != std::string::npos; p = bad.output.find("micsim: error:", p + 1)) ++said;
  CHECK(said == 1);
  CHECK(bad.output.find("strategy.partition_size") != std::string::npos);
  run_shell("rm -rf " + dir);
}
