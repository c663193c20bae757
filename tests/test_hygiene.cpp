// The suite's own rules, checked on its sources.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "approx.hpp"

TEST_CASE("tests compare floating-point values relatively (rel_approx), never with doctest's Approx, whose epsilon is absolute below 1") {
  // doctest::Approx(0.062).epsilon(0.10) accepts 0.084; rel_approx(0.062).epsilon(0.10) does not.
  CHECK(0.084 == doctest::Approx(0.062).epsilon(0.10));
  CHECK(0.084 != rel_approx(0.062).epsilon(0.10));
  CHECK(0.068 == rel_approx(0.062).epsilon(0.10));
  CHECK(0.0 == rel_approx(0.0));
  CHECK(1e-9 != rel_approx(0.0));
  const std::string needle = std::string("doctest::") + "Approx(";
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::string(MICSIM_SOURCE_DIR) + "/tests")) {
    const auto name = e.path().filename().string();
    if (e.path().extension() != ".cpp" && e.path().extension() != ".hpp") continue;
    if (name == "approx.hpp" || name == "test_hygiene.cpp") continue;
    std::ifstream f(e.path());
    std::stringstream text;
    text << f.rdbuf();
    ++files;
    CHECK_MESSAGE(text.str().find(needle) == std::string::npos, name << " uses doctest's Approx: use rel_approx (tests/approx.hpp)");
  }
  CHECK(files > 30);
}

TEST_CASE("test case names hold no semicolon: CTest reads a name as a list and would register the pieces") {
  const std::string open = std::string("TEST_CASE") + "(\"";
  int names = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::string(MICSIM_SOURCE_DIR) + "/tests")) {
    if (e.path().extension() != ".cpp") continue;
    std::ifstream f(e.path());
    std::stringstream buf;
    buf << f.rdbuf();
    const std::string text = buf.str();
    for (size_t at = text.find(open); at != std::string::npos; at = text.find(open, at + 1)) {
      const size_t from = at + open.size(), to = text.find("\")", from);
      if (to == std::string::npos) break;
      const std::string name = text.substr(from, to - from);
      ++names;
      CHECK_MESSAGE(name.find(';') == std::string::npos, e.path().filename().string() << ": \"" << name << "\"");
    }
  }
  CHECK(names > 200);
}
