// Crash reproducers: on an internal compiler error, a directory with the input graph and repro.sh.
#pragma once

#include "driver/options.h"

namespace fxc {

/// Precomputes everything an internal-compiler-error reproducer needs (its directory
/// ${TMPDIR:-/tmp}/fxc-crash-<pid>, the copies to make, the text of repro.sh), so that
/// write_crash_repro() can run in a signal handler. Call once, after option parsing and before
/// compiling. `argv` is the command line as given (response files are kept as @file arguments).
void prepare_crash_repro(int argc, char** argv, const Options& opts);

/// Writes the reproducer: the directory, a copy of the input graph, a symlink to each external
/// weight file a .fxg names (absolute target), and repro.sh, which re-runs the exact command line
/// from the original working directory on the copied graph. Async-signal-safe (mkdir, open, read,
/// write, symlink only). Returns the path of repro.sh, or nullptr when nothing was prepared or
/// writing failed.
const char* write_crash_repro();

/// The path of repro.sh escaped for a JSON string (valid after prepare_crash_repro).
const char* crash_repro_json_path();

} // namespace fxc
