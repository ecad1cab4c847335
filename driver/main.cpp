// fxc's entry point: parse the command line, run the pipeline, map failures to exit codes.
#include "driver/driver.h"
#include "driver/options.h"
#include "frontend/diag.h"

#include <cstdio>
#include <exception>

int main(int argc, char** argv) {
  fxc::Options opts;
  if (auto status = fxc::parse_options(argc, argv, &opts)) return *status;
  try {
    return fxc::run_driver(opts);
  } catch (const fxc::Error& e) {
    fxc::report_error(opts, e);
    return 1;
  } catch (const fxc::UsageError& e) {
    fxc::report_diagnostic(opts, "error", "", e.what());
    return 2;
  } catch (const std::exception& e) {
    fxc::report_diagnostic(opts, opts.diagnostics == "json" ? "fatal" : "internal compiler error",
                           "", std::string(e.what()) +
                                   "\nplease report this bug with the command line and the input "
                                   "graph (" + opts.input + ")");
    return 70;
  }
}
