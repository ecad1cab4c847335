// The doctest runner for every unit test in test/unit/. CMakeLists.txt registers one ctest per
// file (--source-file) and one for the "gpu" suite. A run that ran no case, or skipped one
// (test/unit/skip.h) without failing, exits 77: ctest shows it as "Skipped", not "Passed".
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "skip.h"

#include <cstdio>

namespace {

int cases_run = 0;

// Counts the test cases that start; reports nothing itself.
struct CaseCounter : doctest::IReporter {
  explicit CaseCounter(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_start(const doctest::TestCaseData& tc) override {
    ++cases_run;
    fxc::testing::current_case() = tc.m_name;
  }
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};

REGISTER_LISTENER("case_counter", 1, CaseCounter);

} // namespace

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  int rc = context.run();
  if (rc != 0 || context.shouldExit()) return rc;
  const auto& skipped = fxc::testing::skipped_cases();
  if (!skipped.empty()) {
    std::printf("fxc_unit: %zu case(s) skipped:\n", skipped.size());
    for (const auto& s : skipped) std::printf("  %s\n", s.c_str());
    return 77;
  }
  if (cases_run == 0) {
    std::printf("fxc_unit: no test case matched the filters\n");
    return 77;
  }
  return 0;
}
