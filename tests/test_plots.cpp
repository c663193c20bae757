// Plots and the HTML report (scripts/plot): drawn from real plan and sweep JSON, self-contained, naming
// overridden prices and the configurations that do not fit; bad input exits 2.
#include <doctest/doctest.h>

#include <stdlib.h>

#include <fstream>
#include <sstream>

#include "helpers.hpp"

using micsim::test::run_cli;

namespace {
micsim::test::Cmd sh(const std::string& cmd) { return micsim::test::run_shell(cmd + " 2>&1"); }
using micsim::test::read_text;
}  // namespace

TEST_CASE("plots and the HTML report: instance and strategy told apart, misfits and overridden prices shown") {
  if (std::system("/usr/bin/python3 -c 'import matplotlib' >/dev/null 2>&1") != 0) {
    MESSAGE("skipped: /usr/bin/python3 has no matplotlib (./scripts/test installs python3-matplotlib)");
    return;
  }
  const std::string dir = micsim::test::temp_dir("plots");
  const std::string scenario = std::string(MICSIM_SOURCE_DIR) + "/scenarios/bert-10b-mics-p3dn-16-nodes.yaml";
  const std::string plot = std::string("/usr/bin/python3 ") + MICSIM_SOURCE_DIR + "/scripts/plot ";
  auto p = run_cli("plan " + scenario + " --nodes 2,4,8 --instances p3dn.24xlarge,p4d.24xlarge --price p4d.24xlarge=12 "
                   "--refine 1 -q --json " + dir + "/plan.json");
  REQUIRE_MESSAGE(p.status == 0, p.output);
  auto r = sh(plot + dir + "/plan.json --out " + dir + "/plan --html " + dir + "/plan.html");
  REQUIRE_MESSAGE(r.status == 0, r.output);
  const std::string page = read_text(dir + "/plan.html");
  CHECK(page.find("<svg") != std::string::npos);
  CHECK(page.find("src=\"http") == std::string::npos);  // self-contained
  CHECK(page.find("Pareto front") != std::string::npos);
  CHECK(page.find("p4d.24xlarge $12/h (--price)") != std::string::npos);
  CHECK(page.find("Does not fit in GPU memory") != std::string::npos);
  CHECK(page.find("on p3dn.24xlarge") != std::string::npos);  // legend: strategy on instance
  CHECK(page.find("on p4d.24xlarge") != std::string::npos);
  CHECK(read_text(dir + "/plan-pareto.png").size() > 1000);

  auto s = run_cli("sweep " + scenario + " --vary cluster.nodes=2,4 --vary strategy.kind=mics,zero3 --vary training.micro_batch=8,64 --json " +
                   dir + "/sweep.json");
  REQUIRE_MESSAGE(s.status == 0, s.output);
  auto r2 = sh(plot + dir + "/sweep.json --out " + dir + "/sweep --html " + dir + "/sweep.html");
  REQUIRE_MESSAGE(r2.status == 0, r2.output);
  const std::string sp = read_text(dir + "/sweep.html");
  CHECK(sp.find("tokens/s per GPU") != std::string::npos);
  CHECK(sp.find("does not fit in GPU memory") != std::string::npos);  // micro-batch 64 does not fit

  auto bad = sh(plot + dir + "/nope.json");
  CHECK(bad.status == 2);
  std::ofstream(dir + "/bad.json") << "{\"x\": 1}";
  CHECK(sh(plot + dir + "/bad.json").status == 2);
}
