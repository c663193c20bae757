// The test runner: doctest's own, with one addition. ctest runs each test case by name
// (--test-case=NAME, doctest_discover_tests); a name that no longer matches its case (CMake splits a
// name at ';' into two entries, for one) would run nothing and pass. So a run filtered by test case
// that selects no case fails, naming its filter.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <string>

namespace {

unsigned cases_selected = 0;

// Listens for the run's end only, to learn how many test cases passed the filters.
struct CountSelectedCases : doctest::IReporter {
  explicit CountSelectedCases(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats& s) override { cases_selected = s.numTestCasesPassingFilters; }
  void test_case_start(const doctest::TestCaseData&) override {}
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};
REGISTER_LISTENER("count_selected_cases", 1, CountSelectedCases);

}  // namespace

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int status = context.run();
  if (context.shouldExit()) return status;  // a query (--list-test-cases) or --help
  std::string filter;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    for (const char* prefix : {"--test-case=", "-tc=", "--dt-test-case=", "--dt-tc="})
      if (a.rfind(prefix, 0) == 0) filter = a.substr(std::string(prefix).size());
  }
  if (status == 0 && !filter.empty() && cases_selected == 0) {
    std::fprintf(stderr, "micsim_tests: no test case matches --test-case=%s (renamed, or a name ctest split?)\n", filter.c_str());
    return 1;
  }
  return status;
}
