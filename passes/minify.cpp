// The graph minifier: shrinks a failing graph to a small one that still fails (docs/design.md §5).
#include "passes/minify.h"

#include "frontend/diag.h"
#include "frontend/schema.h"
#include "frontend/shape_prop.h"
#include "frontend/verify.h"
#include "passes/graph_utils.h"
#include "runtime/interpreter.h"

#include <cassert>
#include <exception>
#include <optional>
#include <tuple>

namespace fxc {

namespace {

/// Thrown inside the search when the predicate-call budget is spent.
struct CallLimitReached {};

/// A graph under consideration and, for each of its values, the value of the original graph
/// it came from (so concrete values, indexed by original ValueId, follow it through rewrites).
struct State {
  Graph graph;
  std::vector<ValueId> origin;
};

using Measure = std::tuple<size_t, size_t, size_t, size_t>;

/// What must strictly decrease for a candidate to count as progress.
Measure measure(const Graph& g) {
  return {g.nodes.size(), g.outputs.size(), g.inputs.size(), g.weights.size()};
}

std::string plural(size_t n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

int64_t pow2_floor(int64_t n) {
  int64_t p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

bool has_inplace(const Graph& g) {
  for (const Node& n : g.nodes)
    if (n.schema != nullptr && n.schema->is_inplace) return true;
  return false;
}

/// For each value: index of the last node that uses it, g.nodes.size() when a graph output
/// uses it, -1 when unused.
std::vector<int64_t> last_uses(const Graph& g) {
  std::vector<int64_t> last(g.values.size(), -1);
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (ValueId v : g.nodes[i].tensor_inputs()) last[v] = int64_t(i);
  for (ValueId v : g.outputs) last[v] = int64_t(g.nodes.size());
  return last;
}

class Minifier {
public:
  Minifier(const Graph& g, const std::vector<Tensor>& inputs, const FailurePredicate& pred,
           const MinifyOptions& opts)
      : pred_(pred), opts_(opts) {
    check_inputs(g, inputs);
    note("minifying " + describe(g));
    cur_.graph = g;
    cur_.origin.resize(g.values.size());
    for (size_t v = 0; v < g.values.size(); ++v) cur_.origin[v] = ValueId(v);
    compute_concrete(g, inputs);
  }

  MinifyResult run() {
    MinifyResult res;
    res.initial_nodes = int64_t(cur_.graph.nodes.size());
    try {
      if (!fails(cur_))
        throw Error(cur_.graph.source, "the graph does not fail before minifying, so there is "
                                       "nothing to minify");
      search();
    } catch (const CallLimitReached&) {
      res.hit_call_limit = true;
      note("stopped after " + plural(size_t(calls_), "predicate call") + " (the limit)");
    }
    note("minimal graph: " + describe(cur_.graph) + " after " +
         plural(size_t(calls_), "predicate call"));
    res.inputs = user_inputs(cur_);
    res.graph = std::move(cur_.graph);
    res.predicate_calls = calls_;
    return res;
  }

private:
  const FailurePredicate& pred_;
  const MinifyOptions& opts_;
  State cur_;
  int lift_attempts_ = 0;
  std::vector<Tensor> concrete_; ///< by original ValueId; undefined when unknown
  int64_t calls_ = 0;

  void note(const std::string& line) const {
    if (opts_.progress) opts_.progress(line);
  }

  static std::string describe(const Graph& g) {
    size_t user = 0;
    for (const GraphInput& in : g.inputs) user += in.kind == InputKind::UserInput;
    return plural(g.nodes.size(), "node") + ", " + plural(user, "user input") + ", " +
           plural(g.inputs.size() - user, "weight input") + ", " +
           plural(g.outputs.size(), "output");
  }

  static void check_inputs(const Graph& g, const std::vector<Tensor>& inputs) {
    size_t k = 0;
    for (const GraphInput& in : g.inputs) {
      if (in.kind != InputKind::UserInput) continue;
      if (k >= inputs.size()) break;
      const TensorMeta& m = g.values[in.value].meta;
      const Tensor& t = inputs[k++];
      if (!t.defined() || t.sizes() != m.sizes || t.dtype() != m.dtype)
        throw Error(g.source, "minify: input '" + g.values[in.value].name + "' is " +
                                  (t.defined() ? format_meta(t.meta()) : "undefined") +
                                  " but the graph expects " + format_meta(m));
    }
    size_t expected = 0;
    for (const GraphInput& in : g.inputs) expected += in.kind == InputKind::UserInput;
    if (expected != inputs.size())
      throw Error(g.source, "minify: the graph has " + plural(expected, "user input") + " but " +
                                std::to_string(inputs.size()) + " were given");
  }

  /// Concrete values of every value of the original graph: user inputs, weights, and every
  /// intermediate from one reference run. Values that may become inputs are kept contiguous
  /// at offset 0 (copied only when they are not). When the graph has in-place ops everything
  /// is copied, so later ops cannot change what was recorded. A failing reference run leaves
  /// the values after the failing node unknown.
  void compute_concrete(const Graph& g, const std::vector<Tensor>& inputs) {
    bool copy = has_inplace(g);
    auto keep = [copy](const Tensor& t) {
      return copy || !t.is_contiguous() || t.storage_offset() != 0 ? t.clone() : t;
    };
    concrete_.assign(g.values.size(), Tensor());
    size_t k = 0;
    for (const GraphInput& in : g.inputs) {
      if (in.kind == InputKind::UserInput) {
        concrete_[in.value] = copy ? inputs[k].clone() : inputs[k];
        ++k;
        continue;
      }
      auto it = g.weights.find(in.fqn);
      assert(it != g.weights.end() && "weight input without weights");
      concrete_[in.value] = keep(Tensor::from_weight(it->second));
    }
    InterpretOptions io;
    size_t known = 0;
    io.on_node = [&](const Node& n, const std::vector<Tensor>& outs) {
      for (size_t i = 0; i < n.outputs.size() && i < outs.size(); ++i)
        if (outs[i].defined()) concrete_[n.outputs[i]] = keep(outs[i]);
      ++known;
    };
    std::vector<Tensor> run_inputs = inputs;
    if (copy)
      for (Tensor& t : run_inputs) t = t.clone();
    try {
      interpret(g, run_inputs, io);
      note("reference run: concrete values for all " + plural(g.nodes.size(), "node"));
    } catch (const std::exception& e) {
      note("reference run failed after " + plural(known, "node") + " (" + e.what() +
           "); later nodes cannot be replaced by inputs");
    }
  }

  std::vector<Tensor> user_inputs(const State& s) const {
    std::vector<Tensor> out;
    for (const GraphInput& in : s.graph.inputs)
      if (in.kind == InputKind::UserInput) out.push_back(concrete_[s.origin[in.value]]);
    return out;
  }

  bool fails(const State& s) {
    if (opts_.max_predicate_calls > 0 && calls_ >= opts_.max_predicate_calls)
      throw CallLimitReached{};
    ++calls_;
    std::vector<Tensor> inputs = user_inputs(s);
    if (!has_inplace(s.graph)) return pred_(s.graph, inputs);
    // In-place ops would mutate the stored concrete values and weights: hand out copies.
    for (Tensor& t : inputs) t = t.clone();
    Graph g = s.graph;
    for (auto& [fqn, w] : g.weights) {
      Tensor copy = Tensor::from_weight(w).clone();
      w.storage = copy.storage();
      w.meta = copy.meta();
    }
    return pred_(g, inputs);
  }

  /// Normalises a candidate (dead code, unused inputs, contiguous new inputs) and checks that
  /// it is smaller than the current state and valid. nullopt when it is not worth a call.
  std::optional<State> prepare(GraphRemap r, const std::vector<ValueId>& origin) {
    State s;
    s.origin.assign(r.graph.values.size(), kNoValue);
    for (size_t v = 0; v < r.value_map.size(); ++v)
      if (r.value_map[v] != kNoValue) s.origin[r.value_map[v]] = origin[v];
    GraphRemap dce = eliminate_dead_code(r.graph);
    GraphRemap unused = remove_unused_inputs(dce.graph);
    std::vector<ValueId> map = compose_value_maps(dce.value_map, unused.value_map);
    State out;
    out.graph = std::move(unused.graph);
    out.origin.assign(out.graph.values.size(), kNoValue);
    for (size_t v = 0; v < map.size(); ++v)
      if (map[v] != kNoValue) out.origin[map[v]] = s.origin[v];
    if (measure(out.graph) >= measure(cur_.graph)) return std::nullopt;

    // Inputs created from intermediates or weights hold contiguous copies; give their values
    // that metadata and recompute what depends on it.
    bool changed = false;
    for (const GraphInput& in : out.graph.inputs) {
      if (in.kind != InputKind::UserInput) continue;
      TensorMeta& m = out.graph.values[in.value].meta;
      const Tensor& t = concrete_[out.origin[in.value]];
      assert(t.defined() && "input without a concrete value");
      if (m.strides == t.strides() && m.storage_offset == t.storage_offset()) continue;
      m.strides = t.strides();
      m.storage_offset = t.storage_offset();
      changed = true;
    }
    try {
      if (changed) propagate_shapes(out.graph);
      verify_graph(out.graph);
    } catch (const Error& e) {
      note("candidate rejected by the verifier: " + std::string(e.what()));
      return std::nullopt;
    }
    return out;
  }

  void accept(State s, const std::string& strategy) {
    const Graph& a = cur_.graph;
    const Graph& b = s.graph;
    std::string line =
        plural(a.nodes.size(), "node") + " → " + plural(b.nodes.size(), "node") + ": " + strategy;
    if (a.outputs.size() != b.outputs.size())
      line += " (outputs " + std::to_string(a.outputs.size()) + " → " +
              std::to_string(b.outputs.size()) + ")";
    if (a.inputs.size() != b.inputs.size())
      line += " (inputs " + std::to_string(a.inputs.size()) + " → " +
              std::to_string(b.inputs.size()) + ")";
    if (a.weights.size() != b.weights.size())
      line += " (weights " + std::to_string(a.weights.size()) + " → " +
              std::to_string(b.weights.size()) + ")";
    note(line);
    cur_ = std::move(s);
  }

  /// Prepares, tests and (when it still fails) accepts a candidate.
  bool attempt(GraphRemap r, const std::vector<ValueId>& origin, const std::string& strategy) {
    std::optional<State> s = prepare(std::move(r), origin);
    if (!s || !fails(*s)) return false;
    accept(std::move(*s), strategy);
    return true;
  }

  bool dead_code() {
    const Graph& g = cur_.graph;
    GraphRemap same{g, {}};
    same.value_map.resize(g.values.size());
    for (size_t v = 0; v < g.values.size(); ++v) same.value_map[v] = ValueId(v);
    return attempt(std::move(same), cur_.origin, "dead-code elimination");
  }

  /// Tried once at the start and once more at the fixpoint, to bound predicate calls.
  bool lift_weights() {
    if (cur_.graph.weights.empty() || lift_attempts_ >= 2) return false;
    ++lift_attempts_;
    Graph lifted = lift_weights_to_inputs(cur_.graph, nullptr);
    GraphRemap r{std::move(lifted), {}};
    r.value_map.resize(r.graph.values.size());
    for (size_t v = 0; v < r.value_map.size(); ++v) r.value_map[v] = ValueId(v);
    return attempt(std::move(r), cur_.origin, "lift weights to inputs");
  }

  GraphRemap with_outputs(const Graph& g, std::vector<ValueId> outputs) {
    SubgraphSpec spec;
    spec.keep_node.assign(g.nodes.size(), true);
    spec.outputs = std::move(outputs);
    return extract_subgraph(g, spec);
  }

  bool drop_outputs() {
    bool progress = false;
    for (int64_t gran = pow2_floor(int64_t(cur_.graph.outputs.size())) / 2; gran >= 1; gran /= 2) {
      for (size_t start = 0; start < cur_.graph.outputs.size() && cur_.graph.outputs.size() > 1;) {
        const std::vector<ValueId>& outs = cur_.graph.outputs;
        std::vector<ValueId> keep;
        for (size_t i = 0; i < outs.size(); ++i)
          if (i < start || i >= start + size_t(gran)) keep.push_back(outs[i]);
        if (keep.empty() || !attempt(with_outputs(cur_.graph, keep), cur_.origin, "drop outputs")) {
          start += size_t(gran);
          continue;
        }
        progress = true;
      }
    }
    return progress;
  }

  /// Keeps nodes [0, k] and returns every value of that prefix the rest of the graph used.
  GraphRemap prefix(int64_t k, const std::vector<int64_t>& last) {
    const Graph& g = cur_.graph;
    SubgraphSpec spec;
    spec.keep_node.assign(g.nodes.size(), false);
    for (int64_t i = 0; i <= k; ++i) spec.keep_node[i] = true;
    for (size_t v = 0; v < g.values.size(); ++v) {
      int32_t p = g.values[v].producer;
      if (p >= 0 && p <= k && last[v] > k) spec.outputs.push_back(ValueId(v));
    }
    return extract_subgraph(g, spec);
  }

  bool truncate_suffix() {
    int64_t n = int64_t(cur_.graph.nodes.size());
    if (n < 2) return false;
    std::vector<int64_t> last = last_uses(cur_.graph);
    // Binary search for the shortest failing prefix; prefix n-1 is the graph itself.
    int64_t lo = 0, hi = n - 1;
    std::optional<State> best;
    try {
      while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        std::optional<State> s = prepare(prefix(mid, last), cur_.origin);
        if (s && fails(*s)) {
          hi = mid;
          best = std::move(s);
        } else {
          lo = mid + 1;
        }
      }
    } catch (const CallLimitReached&) {
      // Keep the shortest failing prefix found before the budget ran out.
      if (best) accept(std::move(*best), "truncate suffix");
      throw;
    }
    if (!best) return false;
    accept(std::move(*best), "truncate suffix");
    return true;
  }

  /// Replaces nodes [start, end) by the concrete values of what the rest of the graph uses.
  /// With `keep_before`, values computed before the window that only the window used become
  /// outputs, so the nodes computing them stay alive instead of becoming dead code.
  std::optional<GraphRemap> replace_window(size_t start, size_t end, bool keep_before) {
    const Graph& g = cur_.graph;
    std::vector<int64_t> last = last_uses(g);
    SubgraphSpec spec;
    spec.keep_node.assign(g.nodes.size(), true);
    spec.outputs = g.outputs;
    std::vector<bool> boundary(g.values.size(), false);
    for (size_t i = start; i < end; ++i) {
      spec.keep_node[i] = false;
      for (ValueId v : g.nodes[i].outputs) {
        if (last[v] < int64_t(end)) continue;
        if (!concrete_[cur_.origin[v]].defined()) return std::nullopt;
        spec.new_inputs.push_back(v);
      }
      for (ValueId v : g.nodes[i].tensor_inputs()) {
        int32_t p = g.values[v].producer;
        boundary[v] = keep_before && p >= 0 && size_t(p) < start && last[v] < int64_t(end);
      }
    }
    size_t plain_outputs = spec.outputs.size();
    for (size_t v = 0; v < g.values.size(); ++v)
      if (boundary[v]) spec.outputs.push_back(ValueId(v));
    if (keep_before && spec.outputs.size() == plain_outputs) return std::nullopt;
    return extract_subgraph(g, spec);
  }

  bool delta_debug(int64_t gran) {
    bool progress = false;
    std::string what = "delta debugging (window " + std::to_string(gran) + ")";
    for (size_t start = 0; start < cur_.graph.nodes.size();) {
      size_t end = std::min(cur_.graph.nodes.size(), start + size_t(gran));
      std::optional<GraphRemap> r = replace_window(start, end, false);
      if (r && attempt(std::move(*r), cur_.origin, what)) {
        progress = true;
        continue;
      }
      // The window may have been needed only to keep earlier nodes alive: retry with the
      // values it consumed as outputs.
      r = replace_window(start, end, true);
      if (r && attempt(std::move(*r), cur_.origin, what + ", inputs kept as outputs")) {
        progress = true;
        continue;
      }
      start += size_t(gran);
    }
    return progress;
  }

  void search() {
    dead_code();
    lift_weights();
    for (;;) {
      bool progress = drop_outputs();
      progress |= truncate_suffix();
      int64_t top = pow2_floor(std::max<int64_t>(1, int64_t(cur_.graph.nodes.size())));
      if (opts_.max_granularity > 0) top = std::min(top, pow2_floor(opts_.max_granularity));
      for (int64_t gran = top; gran >= 1; gran /= 2) {
        if (delta_debug(gran)) {
          progress = true;
          break;
        }
      }
      if (!progress && !lift_weights()) return;
    }
  }
};

} // namespace

MinifyResult minify(const Graph& g, const std::vector<Tensor>& inputs,
                    const FailurePredicate& still_fails, const MinifyOptions& opts) {
  return Minifier(g, inputs, still_fails, opts).run();
}

} // namespace fxc
