// Writing fxc's native graph format (.fxg JSON, .fxg.zst compressed). Reading is in import.h.
#pragma once

#include "frontend/graph.h"

#include <string>

namespace fxc {

struct FxgWriteOptions {
  /// Where parameter values go: "" embeds nothing and writes an init rule per parameter
  /// (only valid for graphs whose weights came from rules); otherwise the name of a
  /// .safetensors file written next to the .fxg holding every weight.
  std::string weights_file;
};

/// Serialises `g` as .fxg JSON text (deterministic: stable key order, no timestamps).
std::string fxg_to_json(const Graph& g, const FxgWriteOptions& opts);

/// Reads .fxg JSON text held in memory (the graphs inside an .fxo). `source` names it in
/// diagnostics; weights the text reads from a file come from `weights` by key instead (the file
/// name is not opened). Throws fxc::Error.
Graph parse_fxg_text(std::string text, const std::string& source,
                     const std::map<std::string, WeightData>& weights);

/// Writes `g` to `path` (.fxg or .fxg.zst by suffix). Weights go to `<path stem>.safetensors`
/// beside it unless the graph's weights all came from init rules. Throws fxc::Error.
void write_fxg(const Graph& g, const std::string& path);

} // namespace fxc
