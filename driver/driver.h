// The driver: what one invocation of fxc does, from the parsed options to an exit status.
#pragma once

#include "driver/options.h"
#include "frontend/diag.h"

#include <cstdio>
#include <stdexcept>
#include <string>

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

/// Prints one diagnostic that is not an fxc::Error (a usage error, an internal compiler error) on
/// stderr: "<file or fxc>: <severity>: <message>" as text, or with --diagnostics=json one JSON
/// object per line: {"severity", "file", "node", "op", "message"} (severity "error", "fatal"),
/// plus "repro" (the path of an internal compiler error's repro.sh) when `repro` is not empty.
void report_diagnostic(const Options& opts, const std::string& severity, const std::string& file,
                       const std::string& message, const std::string& repro = "");

/// Prints a warning ("fxc: warning: <message>", or JSON with severity "warning"); under -Werror
/// throws UsageError instead, the message marked "[-Werror]".
void report_warning(const Options& opts, const std::string& message);

/// Whether diagnostics are colored: --color=always, or auto when stderr is a terminal (and TERM
/// is not "dumb"); never otherwise.
bool color_wanted(const std::string& color);
void set_color_diagnostics(bool on);
/// One text diagnostic "<where>: <severity>: <message>" with clang's colors when they are on:
/// the location and message bold, the severity red (error), magenta (warning) or cyan (note).
/// Unchanged when colors are off or the line has no severity.
std::string paint_diagnostic(const std::string& line);

/// The report of a check (--expect, --check-accuracy) goes to stdout when it passes, else to
/// stderr, except under --diagnostics=json, where stderr holds only the JSON diagnostics.
std::FILE* check_report_stream(const Options& opts, bool ok);

} // namespace fxc
