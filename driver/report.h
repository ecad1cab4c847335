// --report=DIR: the debug trace of one fxc run as a static HTML site (docs/report.md), and
// --compare=OTHER: what changed against another trace. Checked in a browser by test/report.sh.
#pragma once

#include "driver/logging.h"
#include "frontend/pass_timer.h"

#include <string>
#include <vector>

namespace fxc {

/// What the driver knows besides the debug directory.
struct ReportInput {
  std::string dir;     ///< --report: the site's folder (created)
  std::string compare; ///< --compare: another debug directory, run directory or report; "" none
  /// This run's debug trace (run_<time>-pid_<pid>/); "" when none was written.
  std::string trace_root;
  bool trace_for_report = false; ///< the trace was written for the report only (in dir): moved
                                 ///< to dir/trace, not copied
  std::string minifier_dir;      ///< where --minify wrote minifier/ files; "" when it did not run
  std::string bench_json;        ///< --bench's results (format_bench_json); "" without --bench
  std::string input;             ///< the graph or artifact file
  std::string action; ///< "compile", "run", "bench", "bisect", "minify", "emit=<what>", ...
  std::string backend, device, mode;
  std::string command; ///< the command line, as given
  int status = 0;      ///< the action's exit status
  std::vector<PassSpan> passes;
  std::vector<Logger::Captured> logs; ///< what report_log_capture() kept
  std::string failure_tool_output;    ///< --bisect / --minify lines
  std::string chrome_trace;           ///< the Chrome trace's file name under dir; "" none
};

/// The artifacts and component levels --report keeps from the logs (guards, recompiles,
/// fallbacks, fusion decisions, perf hints, cache and driver events), printed or not.
LogSettings report_log_capture();

/// Writes <dir>/index.html, <dir>/graphs/<graph folder>.html per compiled graph, and
/// <dir>/compare.html with --compare; copies (or moves) the trace to <dir>/trace/ and the
/// minifier's files to <dir>/minifier/. Replaces what an earlier report wrote there (index.html,
/// compare.html, graphs/, trace/, minifier/) and nothing else. The pages need no server and no
/// network; their bytes depend only on the input, the flags and the measured times. Throws
/// fxc::Error when a file cannot be written or --compare names no debug trace.
void write_report(const ReportInput& in);

/// The run directory --compare=`path` names: `path` itself when it holds index.json, its trace/
/// when it is a report, else the newest (by name) of its run_* folders. Throws fxc::Error
/// naming `path` when there is none.
std::string compare_trace_dir(const std::string& path);

/// ptxas -v's figures for one PTX file ("registers 32, spill stores 0 B, spill loads 0 B,
/// stack 0 B"), or "" when ptxas is not found (PATH, $CUDA_HOME/bin, /usr/local/cuda/bin) or
/// fails.
std::string ptxas_resources(const std::string& ptx_path);

} // namespace fxc
