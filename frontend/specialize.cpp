// Binding shape symbols from input sizes, and specializing a dynamic graph (specialize.h).
#include "frontend/specialize.h"

#include "frontend/diag.h"
#include "frontend/shape_prop.h"

#include <set>

namespace fxc {

namespace {

std::string input_label(size_t k, const Graph& g, const GraphInput& in) {
  return "input_" + std::to_string(k) + " '" + g.values[size_t(in.value)].name + "'";
}

const SymbolRange* find_symbol(const Graph& g, const std::string& name) {
  for (const SymbolRange& r : g.symbols)
    if (r.name == name) return &r;
  return nullptr;
}

// Evaluates the expressions of a size list; static entries keep their value.
std::vector<int64_t> evaluate_dims(const std::vector<int64_t>& v, const std::vector<SymExpr>& sym,
                                   const SymBindings& b, const std::string& what, const Graph& g) {
  std::vector<int64_t> out = v;
  for (size_t d = 0; d < sym.size() && d < out.size(); ++d) {
    if (sym[d].empty()) continue;
    std::optional<int64_t> x = evaluate(sym[d], b);
    if (!x)
      throw Error(g.source,
                  what + ": cannot evaluate '" + format_sym(sym[d]) + "' at " + format_bindings(b));
    out[d] = *x;
  }
  return out;
}

// The value of `sym` at which `e` (affine in it, the other symbols bound in `b`) is `v`: from e
// at two points of the symbol's range, checked at a third and at the solution. nullopt when `e`
// is not affine in it or no integer gives `v`.
std::optional<int64_t> solve_affine(const SymExpr& e, const std::string& sym, int64_t v,
                                    const SymBindings& b, const SymbolRange& r) {
  SymBindings at = b;
  auto f = [&](int64_t x) {
    at[sym] = x;
    return evaluate(e, at);
  };
  const int64_t x0 = r.min, x1 = r.min + 1, x2 = r.min + 7;
  std::optional<int64_t> f0 = f(x0), f1 = f(x1), f2 = f(x2);
  if (!f0 || !f1 || !f2) return std::nullopt;
  const int64_t a = *f1 - *f0, c = *f0 - a * x0;
  if (a == 0 || *f2 != a * x2 + c || (v - c) % a != 0) return std::nullopt;
  const int64_t x = (v - c) / a;
  if (f(x) != v) return std::nullopt;
  return x;
}

} // namespace

std::string format_bindings(const SymBindings& b) {
  std::string s;
  for (const auto& [name, v] : b) s += (s.empty() ? "" : ", ") + name + "=" + std::to_string(v);
  return s;
}

std::string describe_symbols(const Graph& g) {
  std::string text = "dynamic shapes: " + std::to_string(g.symbols.size()) + " symbol" +
                     (g.symbols.size() == 1 ? "" : "s");
  for (const SymbolRange& r : g.symbols) {
    text += "\n  " + format_range(r);
    if (!r.unbacked) text += ", hint " + std::to_string(r.hint);
    for (size_t i = 0; r.unbacked && i < g.nodes.size(); ++i) { // the node whose result gives it
      const Node& n = g.nodes[i];
      bool found = false;
      for (ValueId v : n.outputs) {
        const std::vector<SymExpr>& dims = g.values[size_t(v)].meta.sym_sizes;
        for (size_t d = 0; d < dims.size() && !found; ++d)
          if (dims[d].is_symbol() && dims[d].name == r.name) {
            text += ", dim " + std::to_string(d) + " of node '" + n.name + "' (" + n.target + ")";
            found = true;
          }
      }
      if (found) break;
    }
    size_t k = 0;
    std::string dims;
    for (const GraphInput& in : g.inputs) {
      if (in.kind != InputKind::UserInput) continue;
      const TensorMeta& m = g.values[size_t(in.value)].meta;
      for (size_t d = 0; d < m.sym_sizes.size(); ++d)
        if (m.sym_sizes[d].is_symbol() && m.sym_sizes[d].name == r.name)
          dims += (dims.empty() ? "" : ", ") + input_label(k, g, in) + " dim " + std::to_string(d);
      ++k;
    }
    if (!dims.empty()) text += " (" + dims + ")";
  }
  for (const auto& [node, cond] : g.sym_asserts)
    text += "\n  assert (node '" + node + "'): " + cond + " (checked by torch.export, not by fxc)";
  return text + "\n";
}

bool has_unbacked_symbols(const Graph& g) {
  for (const SymbolRange& r : g.symbols)
    if (r.unbacked) return true;
  return false;
}

const Node* first_data_dependent_node(const Graph& g) {
  std::set<std::string> unbacked;
  for (const SymbolRange& r : g.symbols)
    if (r.unbacked) unbacked.insert(r.name);
  if (unbacked.empty()) return nullptr;
  for (const Node& n : g.nodes)
    for (ValueId v : n.outputs) {
      std::set<std::string> used;
      for (const SymExpr& e : g.values[size_t(v)].meta.sym_sizes) collect_symbols(e, used);
      for (const std::string& s : used)
        if (unbacked.count(s)) return &n;
    }
  return nullptr;
}

SymBindings hint_bindings(const Graph& g) {
  SymBindings b;
  for (const SymbolRange& r : g.symbols) b[r.name] = r.hint;
  return b;
}

std::string bind_symbols(const Graph& g, const std::vector<TensorMeta>& inputs, SymBindings* out) {
  SymBindings b;
  std::map<std::string, std::string, std::less<>> bound_by; // symbol -> "input_0 'x' dim 0"
  size_t k = 0;
  std::vector<std::pair<size_t, const GraphInput*>> users;
  for (const GraphInput& in : g.inputs)
    if (in.kind == InputKind::UserInput) users.push_back({k++, &in});
  if (inputs.size() != users.size())
    return "expected " + std::to_string(users.size()) + " inputs, got " +
           std::to_string(inputs.size());
  // Bare symbols first: they give the values.
  for (const auto& [i, in] : users) {
    const TensorMeta& want = g.values[size_t(in->value)].meta;
    const TensorMeta& got = inputs[i];
    if (got.sizes.size() != want.sizes.size())
      return input_label(i, g, *in) + ": rank " + std::to_string(got.sizes.size()) + ", expected " +
             format_meta(want);
    for (size_t d = 0; d < want.sym_sizes.size(); ++d) {
      const SymExpr& e = want.sym_sizes[d];
      if (!e.is_symbol()) continue;
      const std::string where = input_label(i, g, *in) + " dim " + std::to_string(d);
      int64_t v = got.sizes[d];
      auto it = b.find(e.name);
      if (it != b.end() && it->second != v)
        return input_label(i, g, *in) + ": dim " + std::to_string(d) + " is " + std::to_string(v) +
               ", but " + e.name + " is " + std::to_string(it->second) + " (" + bound_by[e.name] +
               ")";
      if (it != b.end()) continue;
      const SymbolRange* r = find_symbol(g, e.name);
      if (r && (v < r->min || v > r->max))
        return input_label(i, g, *in) + ": dim " + std::to_string(d) + " is " + std::to_string(v) +
               ", outside " + format_range(*r);
      b[e.name] = v;
      bound_by[e.name] = where;
    }
  }
  // Then derived dims (torch.export's 2*Dim("h"), Dim("n") + 1): a dim whose size is an affine
  // function of one symbol not bound yet gives that symbol by solving it.
  for (const auto& [i, in] : users) {
    const TensorMeta& want = g.values[size_t(in->value)].meta;
    for (size_t d = 0; d < want.sym_sizes.size(); ++d) {
      const SymExpr& e = want.sym_sizes[d];
      std::set<std::string> used;
      collect_symbols(e, used);
      std::vector<std::string> unbound;
      for (const std::string& u : used)
        if (!b.count(u)) unbound.push_back(u);
      if (unbound.size() != 1) continue;
      const SymbolRange* r = find_symbol(g, unbound[0]);
      if (!r || r->unbacked) continue;
      const int64_t v = inputs[i].sizes[d];
      const std::string label = input_label(i, g, *in) + ": dim " + std::to_string(d) + " is " +
                                std::to_string(v) + ", but " + format_sym(e);
      std::optional<int64_t> s = solve_affine(e, unbound[0], v, b, *r);
      if (!s)
        return label + " cannot be " + std::to_string(v) + " for any integer " + format_range(*r);
      if (*s < r->min || *s > r->max)
        return label + " is " + std::to_string(v) + " only at " + unbound[0] + " = " +
               std::to_string(*s) + ", outside " + format_range(*r);
      b[unbound[0]] = *s;
      bound_by[unbound[0]] = input_label(i, g, *in) + " dim " + std::to_string(d);
    }
  }
  for (const SymbolRange& r : g.symbols)
    if (!r.unbacked && !b.count(r.name))
      return "symbol " + r.name +
             " is not the size of any input dim, so the inputs cannot give "
             "its value";
  // Then every dim: static ones equal, expressions evaluate to the size given.
  for (const auto& [i, in] : users) {
    const TensorMeta& want = g.values[size_t(in->value)].meta;
    const TensorMeta& got = inputs[i];
    for (size_t d = 0; d < want.sizes.size(); ++d) {
      const SymExpr* e =
          d < want.sym_sizes.size() && !want.sym_sizes[d].empty() ? &want.sym_sizes[d] : nullptr;
      int64_t expect = e ? evaluate(*e, b).value_or(-1) : want.sizes[d];
      if (got.sizes[d] != expect)
        return input_label(i, g, *in) + ": dim " + std::to_string(d) + " is " +
               std::to_string(got.sizes[d]) +
               (e ? ", but " + format_sym(*e) + " is " : ", expected ") + std::to_string(expect);
    }
  }
  *out = std::move(b);
  return {};
}

Graph specialize(const Graph& g, const SymBindings& b) {
  if (!g.is_dynamic()) return g;
  Graph s = g;
  s.symbols.clear();
  s.sym_asserts.clear();
  for (const GraphInput& in : s.inputs) {
    TensorMeta& m = s.values[size_t(in.value)].meta;
    if (m.sym_sizes.empty() && m.sym_strides.empty()) continue;
    const std::string what = "input '" + s.values[size_t(in.value)].name + "'";
    m.sizes = evaluate_dims(m.sizes, m.sym_sizes, b, what, g);
    m.strides = m.sym_strides.empty() ? contiguous_strides(m.sizes)
                                      : evaluate_dims(m.strides, m.sym_strides, b, what, g);
    m.sym_sizes.clear();
    m.sym_strides.clear();
  }
  for (Node& n : s.nodes)
    for (Arg& a : n.args) {
      if (a.syms.empty()) continue;
      const std::string what = "node '" + n.name + "'";
      if (a.kind == Arg::Kind::Int) {
        a.i = evaluate_dims({a.i}, a.syms, b, what, g)[0];
      } else {
        a.ints = evaluate_dims(a.ints, a.syms, b, what, g);
      }
      a.syms.clear();
    }
  propagate_shapes(s);
  // What the export recorded, evaluated, must be what the meta functions give; its strides are
  // PyTorch's own, so they are the ones kept.
  for (const Node& n : s.nodes)
    for (ValueId v : n.outputs) {
      const TensorMeta& rec = g.values[size_t(v)].meta;
      if (rec.sym_sizes.empty() && rec.sym_strides.empty()) continue;
      TensorMeta& m = s.values[size_t(v)].meta;
      const std::string what = "value '" + s.values[size_t(v)].name + "'";
      std::vector<int64_t> sizes = evaluate_dims(rec.sizes, rec.sym_sizes, b, what, g);
      if (sizes != m.sizes) {
        TensorMeta want = rec;
        want.sizes = sizes;
        want.sym_sizes.clear();
        throw Error(g.source,
                    "at " + format_bindings(b) + " the meta function gives " + format_meta(m) +
                        " but the export recorded " + format_meta(rec) + " = " + format_meta(want),
                    n.name, n.target);
      }
      if (rec.strides.size() == m.sizes.size())
        m.strides = evaluate_dims(rec.strides, rec.sym_strides, b, what, g);
      m.sym_sizes.clear();
      m.sym_strides.clear();
    }
  return s;
}

} // namespace fxc
