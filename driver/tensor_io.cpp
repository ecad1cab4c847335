// Tensors in and out of the driver: user inputs (file or seeded random), result files, summaries.
#include "driver/tensor_io.h"

#include "frontend/diag.h"
#include "frontend/log.h"
#include "frontend/random.h"
#include "frontend/safetensors.h"

#include <cmath>
#include <cstdio>

namespace fxc {

namespace {
// The upper bound for random integer inputs: embedding indices stay below the table size.
int64_t random_int_bound(const Graph& g, ValueId v) {
  int64_t bound = 2;
  bool found = false;
  for (const Node& n : g.nodes) {
    if (n.target != "aten.embedding.default") continue;
    if (n.arg("indices").tensor != v) continue;
    int64_t rows = g.values[n.arg("weight").tensor].meta.sizes.at(0);
    bound = found ? std::min(bound, rows) : rows;
    found = true;
  }
  return bound;
}

} // namespace

std::vector<InputGuard> input_specs(const Graph& g) {
  std::vector<InputGuard> out;
  for (const GraphInput& in : g.inputs) {
    if (in.kind != InputKind::UserInput) continue;
    const Value& v = g.values[in.value];
    InputGuard s;
    s.name = v.name;
    s.meta.dtype = v.meta.dtype;
    s.meta.sizes = v.meta.sizes;
    s.meta.strides = contiguous_strides(v.meta.sizes);
    s.int_bound = is_floating(v.meta.dtype) ? 0 : random_int_bound(g, in.value);
    out.push_back(s);
  }
  return out;
}

std::vector<Tensor> load_inputs(const Graph& g, const Options& o) {
  return load_inputs(input_specs(g), o);
}

// User inputs from --inputs (by input_<i> or by the input's name), else seeded random.
std::vector<Tensor> load_inputs(const std::vector<InputGuard>& specs, const Options& o,
                                bool check_meta) {
  std::vector<Tensor> inputs;
  std::map<std::string, WeightData> file;
  if (!o.inputs.empty()) file = read_safetensors(o.inputs);
  std::string detail; // --log=+driver: where each input came from
  const bool debug = log_enabled(Component::Driver, Level::Debug);
  int k = 0;
  for (const InputGuard& in : specs) {
    const TensorMeta& m = in.meta;
    std::string key = "input_" + std::to_string(k);
    uint64_t seed = o.seed * 1000003ull + uint64_t(k);
    ++k;
    if (!o.inputs.empty()) {
      auto it = file.find(key);
      if (it == file.end()) it = file.find(in.name);
      if (it == file.end())
        throw Error(o.inputs, "no tensor '" + key + "' or '" + in.name + "' for graph input '" +
                                  in.name + "'");
      Tensor t = Tensor::from_weight(it->second);
      if (check_meta && (t.dtype() != m.dtype || t.dim() != m.dim()))
        throw Error(o.inputs, "input '" + in.name + "': expected " + format_meta(m) + ", got " +
                                  format_meta(t.meta()));
      if (debug)
        detail += "\n  " + key + " '" + in.name + "': " + format_meta(t.meta()) + " from key '" +
                  it->first + "'";
      inputs.push_back(t);
      continue;
    }
    Tensor t = Tensor::empty(m.dtype, m.sizes);
    fill_random(m.dtype, size_t(t.numel()), seed, t.raw_data(), 0,
                in.int_bound > 0 ? in.int_bound : 2);
    if (debug)
      detail += "\n  " + key + " '" + in.name + "': " + format_meta(t.meta()) + " random, seed " +
                std::to_string(seed);
    inputs.push_back(t);
  }
  log_message(Component::Driver, Level::Info,
              "inputs: " + std::to_string(inputs.size()) +
                  (o.inputs.empty() ? " seeded random (--seed=" + std::to_string(o.seed) + ")"
                                    : " from " + o.inputs));
  if (!detail.empty()) log_message(Component::Driver, Level::Debug, "inputs:" + detail);
  return inputs;
}

void write_named_tensors(const std::string& path, const NamedTensors& results) {
  std::vector<Tensor> keep;
  std::vector<SafetensorsEntry> entries;
  for (const auto& [name, t] : results) {
    keep.push_back(t.contiguous());
    entries.push_back({name, keep.back().meta(), keep.back().raw_data()});
    entries.back().meta.strides = contiguous_strides(entries.back().meta.sizes);
    entries.back().meta.storage_offset = 0;
  }
  write_safetensors(path, entries);
}

std::string summarize(const Tensor& t) {
  Tensor c = t.contiguous();
  double sum = 0, sq = 0, mn = INFINITY, mx = -INFINITY;
  int64_t n = c.numel();
  for (int64_t i = 0; i < n; ++i) {
    double x = c.load(i);
    sum += x;
    sq += x * x;
    mn = std::min(mn, x);
    mx = std::max(mx, x);
  }
  char buf[256];
  if (n == 0) return format_meta(t.meta()) + " (empty)";
  std::snprintf(buf, sizeof buf, "%s mean=%.6g std=%.6g min=%.6g max=%.6g",
                format_meta(t.meta()).c_str(), sum / n,
                std::sqrt(std::max(0.0, sq / n - (sum / n) * (sum / n))), mn, mx);
  return buf;
}

NamedTensors read_named_tensors(const std::string& path) {
  NamedTensors out;
  for (const auto& [name, w] : read_safetensors(path))
    out.emplace_back(name, Tensor::from_weight(w).clone());
  return out;
}

} // namespace fxc
