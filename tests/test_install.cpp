// `cmake --install` gives a working micsim outside the repository: the binary, and under share/micsim
// the catalogs, scenarios, docs (JSON schemas) and standalone scripts, which find their data there.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <string>

#include "helpers.hpp"

using namespace micsim::test;

namespace {
bool exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}
}  // namespace

TEST_CASE("cmake --install: binary, catalogs, scenarios, schemas and scripts, usable from the prefix") {
  const std::string bin = MICSIM_BINARY;
  const std::string build = bin.substr(0, bin.rfind('/'));
  const std::string prefix = temp_dir("install");
  REQUIRE(!prefix.empty());
  Cmd inst = run_shell("cmake --install " + build + " --prefix " + prefix + " 2>&1");
  REQUIRE_MESSAGE(inst.status == 0, inst.output);
  const std::string share = prefix + "/share/micsim";
  for (const char* f : {"/catalog/instances.yaml", "/catalog/prices.yaml", "/scenarios/bert-10b-mics-p3dn-16-nodes.yaml",
                        "/docs/schema/simulate.schema.json", "/docs/model.md", "/scripts/plot", "/scripts/check-json-schema",
                        "/scripts/check-handoff"})
    CHECK_MESSAGE(exists(share + f), f);
  REQUIRE(exists(prefix + "/bin/micsim"));
  // The installed binary runs an installed scenario from anywhere, and its JSON passes the installed
  // schema check (when python3-jsonschema is there).
  const std::string out = prefix + "/out.json";
  Cmd sim = run_shell("cd / && " + prefix + "/bin/micsim simulate " + share + "/scenarios/bert-10b-mics-p3dn-16-nodes.yaml --json " +
                      out + " 2>&1");
  REQUIRE_MESSAGE(sim.status == 0, sim.output);
  CHECK(sim.output.find("samples/s") != std::string::npos);
  if (run_shell("/usr/bin/python3 -c 'import jsonschema' 2>/dev/null").status == 0) {
    Cmd check = run_shell(share + "/scripts/check-json-schema simulate " + out + " 2>&1");
    CHECK_MESSAGE(check.status == 0, check.output);
  } else {
    MESSAGE("schema check skipped: no python3-jsonschema");
  }
  // An installed catalog is a starting point for a user catalog: it loads as one.
  Cmd cat = run_shell(prefix + "/bin/micsim --catalog " + share + "/catalog/instances.yaml catalog list 2>&1");
  CHECK_MESSAGE(cat.status == 0, cat.output);
  run_shell("rm -rf " + prefix);
}
