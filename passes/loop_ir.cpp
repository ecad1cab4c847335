// The loop-level IR: symbolic index simplification, value-expression builders, the printer.
#include "passes/loop_ir.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <set>
#include <sstream>

namespace fxc {

namespace {

constexpr int64_t kBig = int64_t(1) << 62;

int64_t sat(__int128 v) {
  return v > kBig ? kBig : v < -kBig ? -kBig : int64_t(v);
}

int64_t floor_div(int64_t a, int64_t d) {
  int64_t q = a / d;
  if ((a % d != 0) && ((a < 0) != (d < 0))) --q;
  return q;
}
int64_t py_mod(int64_t a, int64_t d) {
  return a - floor_div(a, d) * d;
}

std::string inline_expr(const VPtr& e);

std::string fmt_float(double v, DType t) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, t == DType::F64 ? "%.17g" : "%.9g", v);
  return buf;
}

std::string const_str(const VExpr& e) {
  if (is_floating(e.dtype)) return fmt_float(e.fval, e.dtype);
  if (e.dtype == DType::Bool) return e.ival ? "True" : "False";
  return std::to_string(e.ival);
}

std::string inline_expr(const VPtr& e) {
  switch (e->op) {
  case VOp::Const:
    return const_str(*e);
  case VOp::Load:
    return "load(buf" + std::to_string(e->buffer) + ", " + e->index.str() + ")";
  case VOp::Index:
    return "index(" + e->index.str() + ")";
  case VOp::Cast:
    return "to_" + std::string(dtype_name(e->dtype)) + "(" + inline_expr(e->args[0]) + ")";
  default:
    break;
  }
  std::string s = (e->op == VOp::Call ? "call_" + std::string(scalar_fn_name(ScalarFn(e->ival)))
                                      : std::string(vop_name(e->op))) +
                  "(";
  for (size_t i = 0; i < e->args.size(); ++i) s += (i ? ", " : "") + inline_expr(e->args[i]);
  return s + ")";
}

} // namespace

// ---------------------------------------------------------------- index expressions

int compare_atoms(const IndexAtom& a, const IndexAtom& b) {
  if (a.kind != b.kind) return a.kind < b.kind ? -1 : 1;
  switch (a.kind) {
  case IndexAtom::Kind::Var:
    if (a.id != b.id) return a.id < b.id ? -1 : 1;
    return 0;
  case IndexAtom::Kind::Indirect:
    if (a.extent != b.extent) return a.extent < b.extent ? -1 : 1;
    return a.key.compare(b.key) < 0 ? -1 : a.key == b.key ? 0 : 1;
  case IndexAtom::Kind::FloorDiv:
  case IndexAtom::Kind::Mod: {
    if (a.divisor != b.divisor) return a.divisor < b.divisor ? -1 : 1;
    const IndexExpr &x = *a.arg, &y = *b.arg;
    if (x.constant() != y.constant()) return x.constant() < y.constant() ? -1 : 1;
    if (x.terms().size() != y.terms().size()) return x.terms().size() < y.terms().size() ? -1 : 1;
    for (size_t i = 0; i < x.terms().size(); ++i) {
      if (int c = compare_atoms(x.terms()[i].first, y.terms()[i].first)) return c;
      if (x.terms()[i].second != y.terms()[i].second)
        return x.terms()[i].second < y.terms()[i].second ? -1 : 1;
    }
    return 0;
  }
  }
  return 0;
}

IndexExpr IndexExpr::var(int id, int64_t extent) {
  IndexAtom a;
  a.kind = IndexAtom::Kind::Var;
  a.id = id;
  a.extent = extent;
  IndexExpr e;
  if (extent == 1) return e; // a variable over [0, 1) is the constant 0
  e.terms_.push_back({a, 1});
  return e;
}

IndexExpr IndexExpr::indirect(VPtr value, int64_t extent) {
  IndexAtom a;
  a.kind = IndexAtom::Kind::Indirect;
  a.extent = extent;
  a.key = inline_expr(value);
  a.value = std::move(value);
  IndexExpr e;
  e.terms_.push_back({a, 1});
  return e;
}

bool IndexExpr::is_affine() const {
  for (auto& [a, c] : terms_)
    if (a.kind != IndexAtom::Kind::Var) return false;
  return true;
}

int64_t IndexExpr::coeff_of_var(int id) const {
  for (auto& [a, c] : terms_)
    if (a.kind == IndexAtom::Kind::Var && a.id == id) return c;
  return 0;
}

void IndexExpr::add_term(const IndexAtom& a, int64_t c) {
  if (c != 0) terms_.push_back({a, c});
}

namespace {

IndexAtom make_divmod(IndexAtom::Kind k, const IndexExpr& arg, int64_t d) {
  IndexAtom a;
  a.kind = k;
  a.divisor = d;
  a.arg = std::make_shared<const IndexExpr>(arg);
  return a;
}

} // namespace

void IndexExpr::canonicalize() {
  for (bool changed = true; changed;) {
    changed = false;
    std::sort(terms_.begin(), terms_.end(),
              [](auto& a, auto& b) { return compare_atoms(a.first, b.first) < 0; });
    std::vector<std::pair<IndexAtom, int64_t>> merged;
    for (auto& t : terms_) {
      if (!merged.empty() && compare_atoms(merged.back().first, t.first) == 0)
        merged.back().second += t.second;
      else
        merged.push_back(t);
    }
    std::erase_if(merged, [](auto& t) { return t.second == 0; });
    terms_ = std::move(merged);
    // Recombine k*(A mod a) + k*a*(A // a) = k*A and
    // k*(A mod a) + k*a*((A // a) mod b) = k*(A mod a*b).
    for (size_t i = 0; i < terms_.size() && !changed; ++i) {
      auto& [m, k] = terms_[i];
      if (m.kind != IndexAtom::Kind::Mod) continue;
      for (size_t j = 0; j < terms_.size(); ++j) {
        auto& [q, kq] = terms_[j];
        if (kq != k * m.divisor) continue;
        if (q.kind == IndexAtom::Kind::FloorDiv && q.divisor == m.divisor && *q.arg == *m.arg) {
          IndexExpr whole = *m.arg * k;
          size_t hi = std::max(i, j), lo = std::min(i, j);
          terms_.erase(terms_.begin() + hi);
          terms_.erase(terms_.begin() + lo);
          constant_ += whole.constant_;
          for (auto& t : whole.terms_) terms_.push_back(t);
          changed = true;
          break;
        }
        if (q.kind == IndexAtom::Kind::Mod && q.arg->terms().size() == 1 &&
            q.arg->constant() == 0 && q.arg->terms()[0].second == 1) {
          const IndexAtom& inner = q.arg->terms()[0].first;
          if (inner.kind == IndexAtom::Kind::FloorDiv && inner.divisor == m.divisor &&
              *inner.arg == *m.arg) {
            IndexExpr merged_mod = m.arg->mod(m.divisor * q.divisor) * k;
            size_t hi = std::max(i, j), lo = std::min(i, j);
            terms_.erase(terms_.begin() + hi);
            terms_.erase(terms_.begin() + lo);
            constant_ += merged_mod.constant_;
            for (auto& t : merged_mod.terms_) terms_.push_back(t);
            changed = true;
            break;
          }
        }
      }
    }
  }
}

IndexExpr operator+(const IndexExpr& a, const IndexExpr& b) {
  IndexExpr r = a;
  r.constant_ += b.constant_;
  for (auto& t : b.terms_) r.terms_.push_back(t);
  r.canonicalize();
  return r;
}

IndexExpr operator*(const IndexExpr& a, int64_t c) {
  IndexExpr r;
  if (c == 0) return r;
  r.constant_ = a.constant_ * c;
  for (auto& [at, k] : a.terms_) r.terms_.push_back({at, k * c});
  return r;
}

IndexExpr operator-(const IndexExpr& a, const IndexExpr& b) {
  return a + b * -1;
}

std::pair<int64_t, int64_t> IndexExpr::range() const {
  __int128 lo = constant_, hi = constant_;
  for (auto& [a, c] : terms_) {
    int64_t alo = 0, ahi = 0;
    switch (a.kind) {
    case IndexAtom::Kind::Var:
    case IndexAtom::Kind::Indirect:
      alo = 0;
      ahi = a.extent - 1;
      break;
    case IndexAtom::Kind::FloorDiv: {
      auto [l, h] = a.arg->range();
      alo = floor_div(l, a.divisor);
      ahi = floor_div(h, a.divisor);
      break;
    }
    case IndexAtom::Kind::Mod: {
      auto [l, h] = a.arg->range();
      alo = 0;
      ahi = a.divisor - 1;
      if (l >= 0 && h < a.divisor) alo = l, ahi = h;
      break;
    }
    }
    if (c > 0)
      lo += __int128(c) * alo, hi += __int128(c) * ahi;
    else
      lo += __int128(c) * ahi, hi += __int128(c) * alo;
  }
  return {sat(lo), sat(hi)};
}

namespace {

int64_t content_gcd(const IndexExpr& e) {
  int64_t g = std::abs(e.constant());
  for (auto& [a, c] : e.terms()) g = std::gcd(g, std::abs(c));
  return g;
}

IndexExpr single_term(const IndexAtom& a) {
  if (a.kind == IndexAtom::Kind::Var) return IndexExpr::var(a.id, a.extent);
  if (a.kind == IndexAtom::Kind::Indirect) return IndexExpr::indirect(a.value, a.extent);
  if (a.kind == IndexAtom::Kind::FloorDiv) return a.arg->floordiv(a.divisor);
  return a.arg->mod(a.divisor);
}

IndexExpr divide_exact(const IndexExpr& e, int64_t g) {
  IndexExpr r(e.constant() / g);
  for (auto& [a, c] : e.terms()) {
    IndexExpr atom_expr;
    if (a.kind == IndexAtom::Kind::Var)
      atom_expr = IndexExpr::var(a.id, a.extent);
    else if (a.kind == IndexAtom::Kind::Indirect)
      atom_expr = IndexExpr::indirect(a.value, a.extent);
    else if (a.kind == IndexAtom::Kind::FloorDiv)
      atom_expr = a.arg->floordiv(a.divisor);
    else
      atom_expr = a.arg->mod(a.divisor);
    r = r + atom_expr * (c / g);
  }
  return r;
}

/// Splits e into g*M + s with g | d, g > 1 and s in [0, g): then floor(e / d) = floor(M / (d/g))
/// and e mod d = g * (M mod d/g) + s. Tries the terms with the largest coefficients as M.
bool split_aligned(const IndexExpr& e, int64_t d, int64_t* g_out, IndexExpr* m_out,
                   IndexExpr* s_out) {
  std::vector<std::pair<IndexAtom, int64_t>> terms = e.terms();
  std::stable_sort(terms.begin(), terms.end(),
                   [](auto& a, auto& b) { return std::abs(a.second) > std::abs(b.second); });
  for (size_t k = 1; k < terms.size() + 1; ++k) {
    int64_t g = d;
    for (size_t i = 0; i < k; ++i) g = std::gcd(g, std::abs(terms[i].second));
    if (g <= 1) return false;
    IndexExpr big, small(e.constant());
    for (size_t i = 0; i < terms.size(); ++i) {
      IndexExpr t = single_term(terms[i].first);
      if (i < k)
        big = big + t * (terms[i].second / g);
      else
        small = small + t * terms[i].second;
    }
    auto [lo, hi] = small.range();
    if (lo >= 0 && hi < g) {
      *g_out = g;
      *m_out = big;
      *s_out = small;
      return true;
    }
  }
  return false;
}

} // namespace

IndexExpr IndexExpr::floordiv(int64_t d) const {
  assert(d > 0 && "floordiv by a non-positive constant");
  if (d == 1) return *this;
  if (is_const()) return IndexExpr(floor_div(constant_, d));
  IndexExpr q(floor_div(constant_, d)), rest(py_mod(constant_, d));
  for (auto& [a, c] : terms_) {
    if (c % d == 0)
      q.terms_.push_back({a, c / d});
    else
      rest.terms_.push_back({a, c});
  }
  q.canonicalize();
  rest.canonicalize();
  auto [lo, hi] = rest.range();
  if (floor_div(lo, d) == floor_div(hi, d)) return q + IndexExpr(floor_div(lo, d));
  int64_t g = std::gcd(content_gcd(rest), d);
  if (g > 1) return q + divide_exact(rest, g).floordiv(d / g);
  IndexExpr m, small;
  if (split_aligned(rest, d, &g, &m, &small)) return q + m.floordiv(d / g);
  if (rest.constant_ == 0 && rest.terms_.size() == 1 && rest.terms_[0].second == 1 &&
      rest.terms_[0].first.kind == IndexAtom::Kind::FloorDiv) {
    const IndexAtom& inner = rest.terms_[0].first;
    return q + inner.arg->floordiv(inner.divisor * d);
  }
  IndexExpr r = q;
  r.terms_.push_back({make_divmod(IndexAtom::Kind::FloorDiv, rest, d), 1});
  r.canonicalize();
  return r;
}

IndexExpr IndexExpr::mod(int64_t d) const {
  assert(d > 0 && "mod by a non-positive constant");
  if (d == 1) return IndexExpr(0);
  if (is_const()) return IndexExpr(py_mod(constant_, d));
  IndexExpr rest(py_mod(constant_, d));
  for (auto& [a, c] : terms_)
    if (c % d != 0) rest.terms_.push_back({a, c});
  rest.canonicalize();
  if (rest.is_const()) return IndexExpr(py_mod(rest.constant_, d));
  auto [lo, hi] = rest.range();
  if (lo >= 0 && hi < d) return rest;
  int64_t g = std::gcd(content_gcd(rest), d);
  if (g > 1) return divide_exact(rest, g).mod(d / g) * g;
  IndexExpr m, small;
  if (split_aligned(rest, d, &g, &m, &small)) return m.mod(d / g) * g + small;
  if (rest.constant_ == 0 && rest.terms_.size() == 1 && rest.terms_[0].second == 1 &&
      rest.terms_[0].first.kind == IndexAtom::Kind::Mod && rest.terms_[0].first.divisor % d == 0)
    return rest.terms_[0].first.arg->mod(d);
  IndexExpr r;
  r.terms_.push_back({make_divmod(IndexAtom::Kind::Mod, rest, d), 1});
  return r;
}

IndexExpr IndexExpr::substitute(const std::map<int, IndexExpr>& subst) const {
  IndexExpr r(constant_);
  for (auto& [a, c] : terms_) {
    IndexExpr t;
    switch (a.kind) {
    case IndexAtom::Kind::Var: {
      auto it = subst.find(a.id);
      t = it != subst.end() ? it->second : IndexExpr::var(a.id, a.extent);
      break;
    }
    case IndexAtom::Kind::Indirect:
      t = IndexExpr::indirect(fxc::substitute(a.value, subst), a.extent);
      break;
    case IndexAtom::Kind::FloorDiv:
      t = a.arg->substitute(subst).floordiv(a.divisor);
      break;
    case IndexAtom::Kind::Mod:
      t = a.arg->substitute(subst).mod(a.divisor);
      break;
    }
    r = r + t * c;
  }
  return r;
}

bool IndexExpr::operator==(const IndexExpr& o) const {
  if (constant_ != o.constant_ || terms_.size() != o.terms_.size()) return false;
  for (size_t i = 0; i < terms_.size(); ++i)
    if (terms_[i].second != o.terms_[i].second || compare_atoms(terms_[i].first, o.terms_[i].first))
      return false;
  return true;
}

std::string var_name(int id) {
  if (id == kXVar) return "x";
  if (id == kRVar) return "r";
  if (id >= kRVarBase) return "r" + std::to_string(id - kRVarBase);
  return "x" + std::to_string(id);
}

std::string IndexExpr::str() const {
  std::string s;
  for (auto& [a, c] : terms_) {
    std::string atom;
    switch (a.kind) {
    case IndexAtom::Kind::Var:
      atom = var_name(a.id);
      break;
    case IndexAtom::Kind::Indirect:
      atom = "indirect(" + a.key + ")";
      break;
    case IndexAtom::Kind::FloorDiv:
      atom = "((" + a.arg->str() + ") // " + std::to_string(a.divisor) + ")";
      break;
    case IndexAtom::Kind::Mod:
      atom = "((" + a.arg->str() + ") % " + std::to_string(a.divisor) + ")";
      break;
    }
    int64_t mag = c < 0 ? -c : c;
    if (s.empty())
      s = c < 0 ? "-" : "";
    else
      s += c < 0 ? " - " : " + ";
    s += mag == 1 ? atom : std::to_string(mag) + "*" + atom;
  }
  if (s.empty()) return std::to_string(constant_);
  if (constant_ > 0) s += " + " + std::to_string(constant_);
  if (constant_ < 0) s += " - " + std::to_string(-constant_);
  return s;
}

IndexExpr linear_index(const std::vector<IndexExpr>& idx, const std::vector<int64_t>& strides,
                       int64_t offset) {
  assert(idx.size() == strides.size() && "index rank differs from the stride rank");
  IndexExpr r(offset);
  for (size_t i = 0; i < idx.size(); ++i) r = r + idx[i] * strides[i];
  return r;
}

std::vector<IndexExpr> unravel_index(const IndexExpr& linear, const std::vector<int64_t>& sizes) {
  std::vector<IndexExpr> out(sizes.size());
  // An empty tensor has no element to index: every position is 0.
  for (int64_t s : sizes)
    if (s <= 0) return out;
  int64_t stride = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    out[i] = sizes[i] == 1 ? IndexExpr(0) : linear.floordiv(stride).mod(sizes[i]);
    if (i == 0 && sizes[i] != 1) out[i] = linear.floordiv(stride);
    stride *= sizes[i];
  }
  return out;
}

// ---------------------------------------------------------------- value expressions

std::string_view vop_name(VOp op) {
  switch (op) {
  case VOp::Const:
    return "constant";
  case VOp::Load:
    return "load";
  case VOp::Index:
    return "index";
  case VOp::Cast:
    return "to_dtype";
  case VOp::Neg:
    return "neg";
  case VOp::Abs:
    return "abs";
  case VOp::Exp:
    return "exp";
  case VOp::Log:
    return "log";
  case VOp::Sqrt:
    return "sqrt";
  case VOp::Rsqrt:
    return "rsqrt";
  case VOp::Tanh:
    return "tanh";
  case VOp::Sigmoid:
    return "sigmoid";
  case VOp::Erf:
    return "erf";
  case VOp::Not:
    return "logical_not";
  case VOp::Log1p:
    return "log1p";
  case VOp::Expm1:
    return "expm1";
  case VOp::Sin:
    return "sin";
  case VOp::Cos:
    return "cos";
  case VOp::Floor:
    return "floor";
  case VOp::Ceil:
    return "ceil";
  case VOp::Round:
    return "round";
  case VOp::Trunc:
    return "trunc";
  case VOp::BitNot:
    return "bitwise_not";
  case VOp::Tan:
    return "tan";
  case VOp::Asin:
    return "asin";
  case VOp::Acos:
    return "acos";
  case VOp::Atan:
    return "atan";
  case VOp::Sinh:
    return "sinh";
  case VOp::Cosh:
    return "cosh";
  case VOp::Asinh:
    return "asinh";
  case VOp::Acosh:
    return "acosh";
  case VOp::Atanh:
    return "atanh";
  case VOp::Log2:
    return "log2";
  case VOp::Log10:
    return "log10";
  case VOp::Reciprocal:
    return "reciprocal";
  case VOp::Add:
    return "add";
  case VOp::Sub:
    return "sub";
  case VOp::Mul:
    return "mul";
  case VOp::Div:
    return "truediv";
  case VOp::FloorDivide:
    return "floordiv";
  case VOp::Fmod:
    return "fmod";
  case VOp::Remainder:
    return "remainder";
  case VOp::TruncDivide:
    return "truncdiv";
  case VOp::BitAnd:
    return "bitwise_and";
  case VOp::BitOr:
    return "bitwise_or";
  case VOp::BitXor:
    return "bitwise_xor";
  case VOp::Shl:
    return "lshift";
  case VOp::Shr:
    return "rshift";
  case VOp::Atan2:
    return "atan2";
  case VOp::Pow:
    return "pow";
  case VOp::Max:
    return "maximum";
  case VOp::Min:
    return "minimum";
  case VOp::Eq:
    return "eq";
  case VOp::Ne:
    return "ne";
  case VOp::Lt:
    return "lt";
  case VOp::Le:
    return "le";
  case VOp::Gt:
    return "gt";
  case VOp::Ge:
    return "ge";
  case VOp::And:
    return "logical_and";
  case VOp::Or:
    return "logical_or";
  case VOp::Where:
    return "where";
  case VOp::Call:
    return "call";
  }
  return "?";
}

bool vop_is_unary(VOp op) {
  return op >= VOp::Neg && op <= VOp::Reciprocal;
}
bool vop_is_binary(VOp op) {
  return op >= VOp::Add && op <= VOp::Or;
}
bool vop_is_compare(VOp op) {
  return op >= VOp::Eq && op <= VOp::Ge;
}

VPtr v_const(double v, DType t) {
  auto e = std::make_shared<VExpr>();
  e->op = VOp::Const;
  e->dtype = t;
  if (is_floating(t))
    e->fval = v;
  else if (t == DType::Bool)
    e->ival = v != 0;
  else
    e->ival = int64_t(v);
  return e;
}

VPtr v_load(int buffer, IndexExpr index, DType t) {
  auto e = std::make_shared<VExpr>();
  e->op = VOp::Load;
  e->dtype = t;
  e->buffer = buffer;
  e->index = std::move(index);
  return e;
}

VPtr v_index(IndexExpr index, DType t) {
  auto e = std::make_shared<VExpr>();
  e->op = VOp::Index;
  e->dtype = t;
  e->index = std::move(index);
  return e;
}

VPtr v_cast(VPtr a, DType t) {
  if (a->dtype == t) return a;
  if (a->op == VOp::Const) {
    double v = is_floating(a->dtype) ? a->fval : double(a->ival);
    return v_const(v, t);
  }
  auto e = std::make_shared<VExpr>();
  e->op = VOp::Cast;
  e->dtype = t;
  e->args = {std::move(a)};
  return e;
}

VPtr v_unary(VOp op, VPtr a) {
  assert(vop_is_unary(op) && "v_unary needs a unary op");
  auto e = std::make_shared<VExpr>();
  e->op = op;
  e->dtype = op == VOp::Not ? DType::Bool : a->dtype;
  e->args = {std::move(a)};
  return e;
}

VPtr v_binary(VOp op, VPtr a, VPtr b) {
  assert(vop_is_binary(op) && "v_binary needs a binary op");
  assert(a->dtype == b->dtype && "binary operands must share a dtype");
  auto e = std::make_shared<VExpr>();
  e->op = op;
  e->dtype = vop_is_compare(op) || op == VOp::And || op == VOp::Or ? DType::Bool : a->dtype;
  e->args = {std::move(a), std::move(b)};
  return e;
}

VPtr v_where(VPtr cond, VPtr a, VPtr b) {
  assert(cond->dtype == DType::Bool && a->dtype == b->dtype && "where operand types");
  auto e = std::make_shared<VExpr>();
  e->op = VOp::Where;
  e->dtype = a->dtype;
  e->args = {std::move(cond), std::move(a), std::move(b)};
  return e;
}

VPtr v_call(ScalarFn f, std::vector<VPtr> args) {
  assert(!args.empty() && int(args.size()) == scalar_fn_arity(f) && "call operand count");
  auto e = std::make_shared<VExpr>();
  e->op = VOp::Call;
  e->dtype = args[0]->dtype;
  e->ival = int64_t(f);
  e->args = std::move(args);
  return e;
}

namespace {

VPtr subst_rec(const VPtr& e, const std::map<int, IndexExpr>& subst,
               std::map<const VExpr*, VPtr>& memo) {
  auto it = memo.find(e.get());
  if (it != memo.end()) return it->second;
  VPtr out;
  if (e->op == VOp::Const) {
    out = e;
  } else {
    auto n = std::make_shared<VExpr>(*e);
    if (e->op == VOp::Load || e->op == VOp::Index) n->index = e->index.substitute(subst);
    for (auto& a : n->args) a = subst_rec(a, subst, memo);
    out = n;
  }
  memo[e.get()] = out;
  return out;
}

void loads_rec(const VPtr& e, std::set<const VExpr*>& seen,
               const std::function<void(const VExpr&)>& f) {
  if (!seen.insert(e.get()).second) return;
  auto visit_index = [&](const IndexExpr& ix) {
    std::function<void(const IndexExpr&)> walk = [&](const IndexExpr& x) {
      for (auto& [a, c] : x.terms()) {
        if (a.kind == IndexAtom::Kind::Indirect) loads_rec(a.value, seen, f);
        if (a.arg) walk(*a.arg);
      }
    };
    walk(ix);
  };
  for (auto& a : e->args) loads_rec(a, seen, f);
  if (e->op == VOp::Load || e->op == VOp::Index) visit_index(e->index);
  if (e->op == VOp::Load) f(*e);
}

} // namespace

VPtr substitute(const VPtr& e, const std::map<int, IndexExpr>& subst) {
  std::map<const VExpr*, VPtr> memo;
  return subst_rec(e, subst, memo);
}

void for_each_load(const VPtr& e, const std::function<void(const VExpr&)>& f) {
  std::set<const VExpr*> seen;
  loads_rec(e, seen, f);
}

bool index_uses_var(const IndexExpr& e, int id) {
  for (const auto& [a, c] : e.terms()) {
    switch (a.kind) {
    case IndexAtom::Kind::Var:
      if (a.id == id) return true;
      break;
    case IndexAtom::Kind::FloorDiv:
    case IndexAtom::Kind::Mod:
      if (a.arg && index_uses_var(*a.arg, id)) return true;
      break;
    case IndexAtom::Kind::Indirect:
      if (a.value && value_uses_var(*a.value, id)) return true;
      break;
    }
  }
  return false;
}

bool value_uses_var(const VExpr& e, int id) {
  if ((e.op == VOp::Load || e.op == VOp::Index) && index_uses_var(e.index, id)) return true;
  for (const VPtr& a : e.args)
    if (a && value_uses_var(*a, id)) return true;
  return false;
}

int expr_size(const VPtr& e) {
  std::set<const VExpr*> seen;
  std::function<void(const VPtr&)> rec = [&](const VPtr& x) {
    if (!seen.insert(x.get()).second) return;
    for (auto& a : x->args) rec(a);
  };
  rec(e);
  return int(seen.size());
}

const char* gemm_epilogue_name(GemmEpilogue e) {
  switch (e) {
  case GemmEpilogue::None:
    return "none";
  case GemmEpilogue::Bias:
    return "bias";
  case GemmEpilogue::ReluBias:
    return "relu_bias";
  case GemmEpilogue::GeluTanhBias:
    return "gelu_tanh_bias";
  case GemmEpilogue::BiasResidual:
    return "bias_residual";
  }
  return "?";
}

std::string extern_kind_suffix(const ExternCall& c) {
  switch (c.kind) {
  case ExternCall::Kind::Gemm:
    return c.epilogue == GemmEpilogue::None
               ? " (blas)"
               : std::string(" (blas, epilogue ") + gemm_epilogue_name(c.epilogue) + ")";
  case ExternCall::Kind::Conv:
  case ExternCall::Kind::ConvBackwardData:
  case ExternCall::Kind::ConvBackwardFilter: {
    auto pair = [](const std::vector<int64_t>& v) {
      std::string s = "[";
      for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
      return s + "]";
    };
    return std::string(c.op.rfind("onednn_", 0) == 0 ? " (onednn" : " (cudnn") + ", stride " +
           pair(c.stride) + ", padding " + pair(c.padding) + ", dilation " + pair(c.dilation) +
           ", groups " + std::to_string(c.groups) + (c.channels_last ? ", channels_last" : "") +
           (c.post_ops.empty() ? "" : ", post-ops " + c.post_ops) + ")";
  }
  case ExternCall::Kind::Attention: {
    std::ostringstream scale;
    scale.precision(17);
    scale << c.attn_scale;
    return " (cudnn attention, scale " + scale.str() + (c.causal ? ", causal" : "") + ")";
  }
  case ExternCall::Kind::Fallback:
    break;
  }
  return " (fallback)";
}

std::string_view reduce_op_name(ReduceOp op) {
  switch (op) {
  case ReduceOp::Sum:
    return "sum";
  case ReduceOp::Max:
    return "max";
  case ReduceOp::Min:
    return "min";
  case ReduceOp::Any:
    return "any";
  case ReduceOp::ArgMax:
    return "argmax";
  case ReduceOp::ArgMin:
    return "argmin";
  case ReduceOp::Prod:
    return "prod";
  }
  return "?";
}

// ---------------------------------------------------------------- buffers and printing

int64_t Buffer::numel() const {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

int64_t Buffer::rnumel() const {
  int64_t n = 1;
  for (int64_t s : rsizes) n *= s;
  return n;
}

std::vector<int> LoopProgram::reads(int b) const {
  std::set<int> r;
  const Buffer& buf = buffers[b];
  if (buf.body) for_each_load(buf.body, [&](const VExpr& l) { r.insert(l.buffer); });
  if (buf.kind == Buffer::Kind::Extern)
    for (auto& op : buf.call.operands) r.insert(op.buffer);
  if (buf.kind == Buffer::Kind::ExternOutput) r.insert(buf.extern_owner);
  return {r.begin(), r.end()};
}

namespace {

std::string sizes_str(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

std::string kind_name(Buffer::Kind k) {
  switch (k) {
  case Buffer::Kind::Input:
    return "InputBuffer";
  case Buffer::Kind::Pointwise:
    return "ComputedBuffer(pointwise)";
  case Buffer::Kind::Reduction:
    return "ComputedBuffer(reduction)";
  case Buffer::Kind::Extern:
    return "ExternKernel";
  case Buffer::Kind::ExternOutput:
    return "MultiOutput";
  }
  return "?";
}

} // namespace

std::string print_body(const VPtr& body, const LoopProgram& p, const std::string& indent,
                       std::string* result_name) {
  std::map<const VExpr*, std::string> names;
  std::string out;
  int next = 0;
  std::function<std::string(const VPtr&)> rec = [&](const VPtr& e) -> std::string {
    auto it = names.find(e.get());
    if (it != names.end()) return it->second;
    std::vector<std::string> args;
    for (auto& a : e->args) args.push_back(rec(a));
    std::string rhs;
    switch (e->op) {
    case VOp::Const:
      rhs = "constant(" + const_str(*e) + ", " + std::string(dtype_name(e->dtype)) + ")";
      break;
    case VOp::Load: {
      int b = e->buffer;
      std::string bn = b >= 0 && b < int(p.buffers.size()) ? p.buffers[b].name : "buf?";
      rhs = "load(" + bn + ", " + e->index.str() + ")";
      break;
    }
    case VOp::Index:
      rhs = "index_expr(" + e->index.str() + ", " + std::string(dtype_name(e->dtype)) + ")";
      break;
    case VOp::Cast:
      rhs = "to_dtype(" + args[0] + ", " + std::string(dtype_name(e->dtype)) + ")";
      break;
    default:
      rhs = (e->op == VOp::Call ? "call_" + std::string(scalar_fn_name(ScalarFn(e->ival)))
                                : std::string(vop_name(e->op))) +
            "(";
      for (size_t i = 0; i < args.size(); ++i) rhs += (i ? ", " : "") + args[i];
      rhs += ")";
    }
    std::string n = "tmp" + std::to_string(next++);
    out += indent + n + " = " + rhs + "\n";
    names[e.get()] = n;
    return n;
  };
  *result_name = rec(body);
  return out;
}

std::string print_loop_program(const LoopProgram& p) {
  std::string s;
  for (size_t b = 0; b < p.buffers.size(); ++b) {
    const Buffer& buf = p.buffers[b];
    s += buf.name + ": " + kind_name(buf.kind) + "\n";
    s += "  layout: " + std::string(dtype_name(buf.dtype)) + sizes_str(buf.sizes) + "\n";
    if (!buf.origins.empty()) {
      s += "  origins: ";
      for (size_t i = 0; i < buf.origins.size(); ++i) s += (i ? ", " : "") + buf.origins[i];
      s += "\n";
    }
    if (buf.kind == Buffer::Kind::Input) {
      s += buf.input_index >= 0 ? "  user input " + std::to_string(buf.input_index) + "\n"
                                : "  weight " + buf.weight + "\n";
      continue;
    }
    auto rd = p.reads(int(b));
    if (!rd.empty()) {
      s += "  reads: ";
      for (size_t i = 0; i < rd.size(); ++i) s += (i ? ", " : "") + p.buffers[rd[i]].name;
      s += "\n";
    }
    if (buf.kind == Buffer::Kind::Extern) {
      s += "  extern: " + buf.call.op + extern_kind_suffix(buf.call) + "(";
      for (size_t i = 0; i < buf.call.operands.size(); ++i) {
        auto& o = buf.call.operands[i];
        s += (i ? ", " : "") + p.buffers[o.buffer].name + sizes_str(o.sizes) + "{" +
             sizes_str(o.strides).substr(1);
        s.pop_back();
        s += "}+" + std::to_string(o.offset);
      }
      s += ")\n";
      continue;
    }
    if (buf.kind == Buffer::Kind::ExternOutput) {
      s += "  output of " + p.buffers[buf.extern_owner].name + "\n";
      continue;
    }
    s += "  loop: ";
    for (size_t i = 0; i < buf.vars.size(); ++i)
      s += (i ? ", " : "") + buf.vars[i].str() + " < " + std::to_string(buf.sizes[i]);
    if (buf.kind == Buffer::Kind::Reduction) {
      s += " | reduce " + std::string(reduce_op_name(buf.reduce)) + " over ";
      for (size_t i = 0; i < buf.rvars.size(); ++i) {
        auto& v = buf.rvars[i];
        s += (i ? ", " : "") + v.str() + " < " + std::to_string(buf.rsizes[i]);
      }
    }
    s += "\n";
    std::string res;
    s += print_body(buf.body, p, "    ", &res);
    std::vector<int64_t> strides = contiguous_strides(buf.sizes);
    s += "    " + std::string(buf.kind == Buffer::Kind::Reduction ? "reduce_store" : "store") +
         "(" + buf.name + ", " + linear_index(buf.vars, strides).str() + ", " + res + ")\n";
  }
  s += "outputs:";
  for (auto& o : p.outputs)
    s += " " + p.buffers[o.buffer].name + ":" + format_meta_with_strides(o.meta);
  s += "\n";
  return s;
}

} // namespace fxc
