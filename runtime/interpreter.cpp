// The eager interpreter: binds inputs and weights, runs each node's reference kernel in order,
// checks results against the graph's metadata and frees intermediates after their last use.
#include "runtime/interpreter.h"

#include "frontend/diag.h"
#include "frontend/schema.h"
#include "frontend/specialize.h"
#include "runtime/kernels.h"

#include <algorithm>
#include <cassert>
#include <new>
#include <set>

namespace fxc {

namespace {

// The dtype a value has at run time: floating dtypes become f64 in float64 mode.
DType run_dtype(DType t, bool float64) {
  return float64 && is_floating(t) ? DType::F64 : t;
}

std::string meta_str(DType dtype, const std::vector<int64_t>& sizes) {
  TensorMeta m;
  m.dtype = dtype;
  m.sizes = sizes;
  return format_meta(m);
}

// The graph value whose storage `v` names, through views and in-place ops.
ValueId view_root(const Graph& g, ValueId v) {
  for (size_t guard = 0; guard <= g.nodes.size() && v >= 0 && size_t(v) < g.values.size();
       ++guard) {
    int32_t p = g.values[size_t(v)].producer;
    if (p < 0 || size_t(p) >= g.nodes.size()) break;
    const Node& pn = g.nodes[size_t(p)];
    const OpSchema* ps = pn.schema ? pn.schema : find_schema(pn.target);
    if (!ps || !(ps->is_view || ps->is_inplace) || pn.args.empty() ||
        pn.args[0].kind != Arg::Kind::Tensor)
      break;
    v = pn.args[0].tensor;
  }
  return v;
}

// Values whose storage some in-place node mutates, traced back through views to the graph
// input they alias. Weights among them are copied before the run so that g.weights stays
// unchanged across runs.
std::set<ValueId> mutated_roots(const Graph& g) {
  std::set<ValueId> roots;
  for (const Node& n : g.nodes) {
    const OpSchema* s = n.schema ? n.schema : find_schema(n.target);
    if (!s) continue;
    // The written arguments: `self` of an in-place op, any "Tensor(a!)" argument (the
    // running statistics of _native_batch_norm_legit), and the running statistics of
    // batch_norm in training mode, which PyTorch's schema does not mark.
    const bool bn_train = n.target == "aten.batch_norm.default" && s->index_of("training") >= 0 &&
                          n.args[size_t(s->index_of("training"))].b;
    for (size_t k = 0; k < n.args.size() && k < s->args.size(); ++k) {
      const bool stat = s->args[k].name == "running_mean" || s->args[k].name == "running_var";
      if (!(s->args[k].mutated || (k == 0 && s->is_inplace) || (bn_train && stat)) ||
          n.args[k].kind != Arg::Kind::Tensor)
        continue;
      roots.insert(view_root(g, n.args[k].tensor));
    }
  }
  return roots;
}

// True when `strides` lay `sizes` out densely without overlap (a permutation of a contiguous
// layout, e.g. channels_last), so a tensor with exactly numel elements can hold it.
bool dense_layout(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  if (sizes.size() != strides.size()) return false;
  std::vector<size_t> order;
  for (size_t d = 0; d < sizes.size(); ++d)
    if (sizes[d] != 1) order.push_back(d);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return strides[a] < strides[b]; });
  int64_t expected = 1;
  for (size_t d : order) {
    if (sizes[d] == 0) return true;
    if (strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

// The kernel result laid out with the strides PyTorch gave it (recorded in the graph), when
// those differ from the kernel's: later views (e.g. a transpose followed by view) depend on it.
Tensor with_layout(const Tensor& t, const TensorMeta& m) {
  if (t.strides() == m.strides || !dense_layout(m.sizes, m.strides) || t.numel() == 0) return t;
  Tensor out = Tensor::empty(t.dtype(), t.sizes()).as_strided(m.sizes, m.strides, 0);
  out.copy_from(t);
  return out;
}

} // namespace

std::vector<Tensor> interpret(const Graph& g, const std::vector<Tensor>& user_inputs,
                              const InterpretOptions& opts) {
  const bool f64 = opts.float64;
  std::vector<Tensor> env(g.values.size());
  auto check_value = [&](ValueId v) {
    if (v < 0 || size_t(v) >= g.values.size())
      throw Error(g.source, "value id " + std::to_string(v) + " is out of range");
  };

  // Every value id the graph mentions must exist before anything indexes by it.
  for (const GraphInput& in : g.inputs) check_value(in.value);
  for (ValueId v : g.outputs) check_value(v);
  for (const Node& n : g.nodes) {
    for (ValueId v : n.tensor_inputs()) check_value(v);
    for (ValueId v : n.outputs) check_value(v);
  }

  // Graph inputs: user inputs in order, weights from g.weights.
  size_t n_user = 0;
  for (const GraphInput& in : g.inputs) n_user += in.kind == InputKind::UserInput;
  if (user_inputs.size() != n_user)
    throw Error(g.source, "expected " + std::to_string(n_user) + " inputs, got " +
                              std::to_string(user_inputs.size()));
  // A dynamic graph: its symbols bound from the inputs, data-dependent ones as nodes run.
  SymBindings syms;
  if (g.is_dynamic()) {
    std::vector<TensorMeta> metas;
    for (const Tensor& t : user_inputs)
      if (t.defined()) metas.push_back(t.meta());
    if (metas.size() == user_inputs.size())
      if (std::string why = bind_symbols(g, metas, &syms); !why.empty()) throw Error(g.source, why);
  }
  auto sym_range = [&](const std::string& name) -> const SymbolRange* {
    for (const SymbolRange& r : g.symbols)
      if (r.name == name) return &r;
    return nullptr;
  };
  auto evaluate_all = [&](const std::vector<int64_t>& v, const std::vector<SymExpr>& e,
                          const std::function<Error(const std::string&)>& fail) {
    std::vector<int64_t> out = v;
    for (size_t d = 0; d < e.size() && d < out.size(); ++d) {
      if (e[d].empty()) continue;
      std::optional<int64_t> x = evaluate(e[d], syms);
      if (!x) throw fail("cannot evaluate '" + format_sym(e[d]) + "' at " + format_bindings(syms));
      out[d] = *x;
    }
    return out;
  };
  std::set<ValueId> mutated = mutated_roots(g);
  size_t next_user = 0;
  for (const GraphInput& in : g.inputs) {
    check_value(in.value);
    const Value& val = g.values[size_t(in.value)];
    Tensor t;
    std::string what;
    if (in.kind == InputKind::UserInput) {
      t = user_inputs[next_user++];
      what = "input '" + val.name + "'";
      if (!t.defined()) throw Error(g.source, what + ": no tensor given");
    } else {
      what = std::string(input_kind_name(in.kind)) + " '" + in.fqn + "'";
      auto it = g.weights.find(in.fqn);
      if (it == g.weights.end() || !it->second.storage) throw Error(g.source, what + ": no data");
      try {
        t = Tensor::from_weight(it->second);
      } catch (const TensorError& e) {
        throw Error(g.source, what + ": " + e.what());
      }
    }
    if (t.dtype() != val.meta.dtype ||
        (t.sizes() != val.meta.sizes && (in.kind != InputKind::UserInput || !g.is_dynamic())))
      throw Error(g.source,
                  what + ": expected " + format_meta(val.meta) + ", got " + format_meta(t.meta()));
    try {
      // A float64 tensor is used as is: a composite op's subgraph (runtime/kernels.cpp) gets
      // its caller's float64 operands and writes in place into them.
      if (f64 && is_floating(t.dtype()) && t.dtype() != DType::F64)
        t = t.to(DType::F64);
      else if (in.kind != InputKind::UserInput && mutated.count(in.value))
        t = t.clone();
    } catch (const TensorError& e) {
      throw Error(g.source, what + ": " + e.what());
    }
    env[size_t(in.value)] = std::move(t);
  }

  std::vector<int> uses = g.use_counts();
  std::vector<bool> is_output(g.values.size(), false);
  for (ValueId v : g.outputs) {
    check_value(v);
    is_output[size_t(v)] = true;
  }
  auto release = [&](ValueId v) {
    if (--uses[size_t(v)] <= 0 && !is_output[size_t(v)]) env[size_t(v)] = Tensor();
  };

  for (const Node& node : g.nodes) {
    auto node_error = [&](const std::string& msg) {
      return Error(g.source, msg, node.name, node.target);
    };
    const OpSchema* schema = node.schema ? node.schema : find_schema(node.target);
    if (!schema) throw node_error("unknown op");
    if (node.args.size() != schema->args.size())
      throw node_error("node has " + std::to_string(node.args.size()) + " arguments, the schema " +
                       std::to_string(schema->args.size()));
    Node bound_node;
    const Node* np = &node;
    bool symbolic_args = false;
    for (const Arg& a : node.args) symbolic_args = symbolic_args || !a.syms.empty();
    if (!node.schema || symbolic_args) { // run with the looked-up schema and the symbols' values
      bound_node = node;
      bound_node.schema = schema;
      for (Arg& a : bound_node.args) {
        if (a.syms.empty()) continue;
        if (a.kind == Arg::Kind::Int)
          a.i = evaluate_all({a.i}, a.syms, node_error)[0];
        else
          a.ints = evaluate_all(a.ints, a.syms, node_error);
        a.syms.clear();
      }
      np = &bound_node;
    }
    KernelCall call{*np, {}, {}, f64};
    call.tensors.resize(node.args.size());
    call.lists.resize(node.args.size());
    for (size_t i = 0; i < node.args.size(); ++i) {
      const Arg& a = node.args[i];
      auto get = [&](ValueId v) {
        check_value(v);
        const Tensor& t = env[size_t(v)];
        if (!t.defined())
          throw node_error("operand '" + g.values[size_t(v)].name + "' has no value");
        return t;
      };
      if (a.kind == Arg::Kind::Tensor) call.tensors[i] = get(a.tensor);
      if (a.kind == Arg::Kind::Tensors)
        for (ValueId v : a.tensors) call.lists[i].push_back(v == kNoValue ? Tensor() : get(v));
    }
    std::vector<Tensor> outs;
    try {
      outs = run_kernel(call);
    } catch (const TensorError& e) {
      throw node_error(e.what());
    } catch (const std::bad_alloc&) {
      throw node_error("out of memory");
    }
    if (outs.size() != node.outputs.size())
      throw node_error("the kernel returned " + std::to_string(outs.size()) +
                       " results but the node has " + std::to_string(node.outputs.size()) +
                       " outputs");
    for (size_t i = 0; i < outs.size(); ++i) {
      ValueId v = node.outputs[i];
      check_value(v);
      const TensorMeta& m = g.values[size_t(v)].meta;
      DType want = run_dtype(m.dtype, f64);
      std::vector<int64_t> want_sizes = m.sizes;
      const bool symbolic = !m.sym_sizes.empty() || !m.sym_strides.empty();
      if (!m.sym_sizes.empty()) {
        // A data-dependent size is known now: the first result that has it as a dim gives it.
        for (size_t d = 0; d < m.sym_sizes.size() && d < outs[i].sizes().size(); ++d) {
          const SymExpr& e = m.sym_sizes[d];
          const SymbolRange* r = e.is_symbol() ? sym_range(e.name) : nullptr;
          if (!r || !r->unbacked || syms.count(e.name)) continue;
          int64_t got = outs[i].sizes()[d];
          if (got < r->min || got > r->max)
            throw node_error("result " + std::to_string(i) + " dim " + std::to_string(d) + " is " +
                             std::to_string(got) + ", outside " + format_range(*r));
          syms[e.name] = got;
        }
        want_sizes = evaluate_all(m.sizes, m.sym_sizes, node_error);
      }
      if (outs[i].dtype() != want || outs[i].sizes() != want_sizes)
        throw node_error("result " + std::to_string(i) + " is " + format_meta(outs[i].meta()) +
                         " but the graph says " + meta_str(want, want_sizes));
      // Results that alias an operand (views, in-place ops, identities) inherit its layout;
      // fresh results (including reshapes that had to copy) take the layout PyTorch recorded.
      bool aliases = false;
      for (const Tensor& t : call.tensors)
        aliases = aliases || (t.defined() && t.storage() == outs[i].storage());
      for (const auto& list : call.lists)
        for (const Tensor& t : list)
          aliases = aliases || (t.defined() && t.storage() == outs[i].storage());
      if (!aliases && !symbolic) {
        try {
          outs[i] = with_layout(outs[i], m);
        } catch (const TensorError& e) {
          throw node_error(e.what());
        }
      }
      env[size_t(v)] = outs[i];
      // Tensor.item(): its value is the unbacked symbol the later sizes are computed from.
      for (const auto& [sym, value] : g.item_symbols) {
        if (value != g.values[size_t(v)].name) continue;
        const double x = outs[i].item();
        const int64_t k = int64_t(x);
        if (double(k) != x)
          throw node_error("the value " + std::to_string(x) + " gives size symbol " + sym +
                           ", which must be an integer");
        if (const SymbolRange* r = sym_range(sym); r && (k < r->min || k > r->max))
          throw node_error("the value " + std::to_string(k) + " of " + sym + " is outside " +
                           format_range(*r));
        syms[sym] = k;
      }
    }
    if (opts.on_node) opts.on_node(node, outs);
    for (ValueId v : node.tensor_inputs()) release(v);
    for (ValueId v : node.outputs)
      if (uses[size_t(v)] == 0 && !is_output[size_t(v)]) env[size_t(v)] = Tensor();
  }

  std::vector<Tensor> result;
  for (ValueId v : g.outputs) {
    if (!env[size_t(v)].defined())
      throw Error(g.source, "graph output '" + g.values[size_t(v)].name + "' has no value");
    result.push_back(env[size_t(v)]);
  }
  return result;
}

} // namespace fxc
