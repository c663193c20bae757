// Output contracts: every command's --json validates against its schema in docs/schema (checked with
// scripts/check-json-schema, Debian's python3-jsonschema), carries schema_version, and writes counts
// and bytes as integers. A document that breaks the contract is rejected (the check can fail).
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "helpers.hpp"

using micsim::test::run_cli;
using micsim::test::temp_file;

namespace {

micsim::test::Cmd check(const std::string& schema, const std::string& file) {
  return micsim::test::run_shell(std::string("/usr/bin/python3 ") + MICSIM_SOURCE_DIR + "/scripts/check-json-schema " + schema + " " + file + " 2>&1");
}

nlohmann::json load(const std::string& path) { return nlohmann::json::parse(micsim::test::read_text(path)); }

bool have_jsonschema() { return std::system("/usr/bin/python3 -c 'import jsonschema' >/dev/null 2>&1") == 0; }

const std::string kScenario = std::string(MICSIM_SOURCE_DIR) + "/scenarios/bert-10b-mics-p3dn-16-nodes.yaml";

}  // namespace

TEST_CASE("every command's JSON validates against its schema in docs/schema") {
  if (!have_jsonschema()) {
    MESSAGE("skipped: /usr/bin/python3 has no jsonschema module (apt-get install python3-jsonschema; ./scripts/test installs it)");
    return;
  }
  const std::string dir = temp_file("schema-dir-marker", "");
  struct Case {
    std::string schema, args, file;
  };
  const std::vector<Case> cases = {
      {"simulate", "simulate " + kScenario, dir + ".simulate.json"},
      {"simulate", "simulate " + kScenario + " --engine simgrid --set model.layers=4", dir + ".simulate-simgrid.json"},
      {"simulate", "simulate " + kScenario + " --set strategy.kind=zero1 --set strategy.framework=internevo", dir + ".simulate-internevo.json"},
      {"plan", "plan " + kScenario + " --nodes 2,4 --refine 1 -q --objective cost --target-tokens 1e10", dir + ".plan.json"},
      {"sweep", "sweep " + kScenario + " --vary cluster.nodes=2,4 --vary strategy.kind=mics,zero3", dir + ".sweep.json"},
      {"collective", "collective --instance p4d.24xlarge --nodes 2 --op all_gather", dir + ".collective.json"},
      {"catalog", "catalog list", dir + ".catalog-list.json"},
      {"catalog", "catalog show p4d.24xlarge", dir + ".catalog-show.json"},
      {"catalog", "catalog show llama3-70b", dir + ".catalog-model.json"},
  };
  for (const auto& c : cases) {
    auto r = run_cli(c.args + " --json " + c.file);
    REQUIRE_MESSAGE(r.status == 0, c.args << ": " << r.output);
    auto v = check(c.schema, c.file);
    CHECK_MESSAGE(v.status == 0, c.args << ": " << v.output);
    CHECK(load(c.file)["schema_version"] == 1);
  }
  // Integers are integers: counts and bytes never carry a fraction or an exponent.
  auto sim = load(dir + ".simulate.json");
  CHECK(sim["nodes"].is_number_integer());
  CHECK(sim["memory"]["peak_bytes_per_gpu"].is_number_integer());
  for (const auto& c : sim["collectives"]) {
    CHECK(c["bytes"].is_number_integer());
    CHECK(c["calls_per_step"].is_number_integer());
  }
  // The check can fail: a float where an integer belongs, a missing field, an unknown field.
  for (const auto& breakage : {"nodes", "drop", "extra"}) {
    auto bad = sim;
    if (std::string(breakage) == "nodes") bad["nodes"] = 2.5;
    if (std::string(breakage) == "drop") bad.erase("tokens_per_s");
    if (std::string(breakage) == "extra") bad["tokens_per_sec"] = 1.0;
    const std::string path = temp_file(std::string("schema-bad-") + breakage + ".json", bad.dump());
    CHECK_MESSAGE(check("simulate", path).status == 1, breakage);
  }
}
