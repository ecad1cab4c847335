// --trace=f.json: a Chrome trace (chrome://tracing, ui.perfetto.dev) of the compile passes and
// of the kernels of one --bench run.
#pragma once

#include "driver/bench.h"
#include "frontend/pass_timer.h"

#include <string>
#include <vector>

namespace fxc {

/// Writes {"traceEvents": [...], "displayTimeUnit": "ms"}: one process "fxc"; on thread 1
/// ("compile passes") one complete event (ph "X", ts/dur in µs) per pass span; on thread 2
/// ("kernels") one per step of `steps` (a --bench run, laid out back to back from
/// `kernels_start_us` on the pass clock) with args {graph, bytes, flops}. Throws fxc::Error when
/// the file cannot be written.
void write_chrome_trace(const std::string& path, const std::vector<PassSpan>& passes,
                        const std::vector<BenchStep>& steps, double kernels_start_us,
                        const std::string& kernels_track);

} // namespace fxc
