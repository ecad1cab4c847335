// Tensors in and out of the driver: user inputs (file or seeded random), result files, summaries.
#pragma once

#include "driver/options.h"
#include "driver/pipeline.h"
#include "frontend/graph.h"
#include "runtime/artifact.h"
#include "runtime/tensor.h"

#include <string>
#include <vector>

namespace fxc {

/// User inputs from --inputs (by input_<i> or by the graph's input name), else seeded random
/// values (floating N(0,1); integers below the embedding table size when they index one).
/// A file's tensor must have the input's dtype and rank; its sizes may differ (the driver then
/// recompiles for them, see specialize_to_inputs).
std::vector<Tensor> load_inputs(const Graph& g, const Options& o);
/// load_inputs() for inputs described by guards (an .fxo's inputs; int_bound for random
/// integers). With `check_meta` false a file's tensors are taken whatever their dtype and rank:
/// the artifact's guards then judge them (a wrong dtype is a guard failure, not a bad file).
std::vector<Tensor> load_inputs(const std::vector<InputGuard>& inputs, const Options& o,
                                bool check_meta = true);
/// The graph's user inputs as guards: dtype, sizes, contiguous strides, host memory, and for
/// integer inputs that index an embedding the table size (random inputs stay below it).
std::vector<InputGuard> input_specs(const Graph& g);

/// Writes named tensors (contiguous) to a .safetensors file.
void write_named_tensors(const std::string& path, const NamedTensors& tensors);

/// Reads every tensor of a .safetensors file into memory (owned copies).
NamedTensors read_named_tensors(const std::string& path);

/// "f32[64, 256] mean=... std=... min=... max=..."
std::string summarize(const Tensor& t);

} // namespace fxc
