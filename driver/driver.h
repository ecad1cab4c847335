// The driver: what one invocation of fxc does, from the parsed options to an exit status.
#pragma once

#include "driver/options.h"
#include "frontend/diag.h"

#include <stdexcept>

namespace fxc {

/// A command-line problem found after parsing (an option combination, a feature not yet
/// supported). Exit status 2.
class UsageError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Runs what `opts` asks for and returns the exit status. Throws fxc::Error for bad input
/// (exit 1) and UsageError (exit 2); anything else is an internal compiler error (exit 70).
int run_driver(const Options& opts);

/// Prints one diagnostic in the format --diagnostics selects.
void report_error(const Options& opts, const Error& e);

} // namespace fxc
