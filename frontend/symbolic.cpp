// Symbolic size expressions: the two parsers, the printer and evaluation (see symbolic.h).
#include "frontend/symbolic.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace fxc {

SymExpr SymExpr::constant(int64_t v) {
  SymExpr e;
  e.op = Op::Const;
  e.value = v;
  return e;
}

SymExpr SymExpr::floating(double v) {
  SymExpr e;
  e.op = Op::Float;
  e.real = v;
  return e;
}

SymExpr SymExpr::symbol(std::string name) {
  SymExpr e;
  e.op = Op::Symbol;
  e.name = std::move(name);
  return e;
}

SymExpr SymExpr::apply(Op op, std::vector<SymExpr> args) {
  SymExpr e;
  e.op = op;
  e.args = std::move(args);
  return e;
}

bool SymExpr::operator==(const SymExpr& o) const {
  return op == o.op && value == o.value && (real == o.real || (real != real && o.real != o.real)) &&
         name == o.name && args == o.args;
}

namespace {

// A cursor over the text with the helpers both parsers share.
class Cursor {
public:
  Cursor(std::string_view text, const char* form) : s_(text), form_(form) {}

  [[noreturn]] void fail(const std::string& why) const {
    throw SymError("cannot read the " + std::string(form_) + " expression '" + std::string(s_) +
                   "': " + why + " at offset " + std::to_string(i_));
  }
  void skip_space() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool at_end() {
    skip_space();
    return i_ == s_.size();
  }
  char peek() {
    skip_space();
    return i_ < s_.size() ? s_[i_] : '\0';
  }
  bool accept(std::string_view tok) {
    skip_space();
    if (s_.substr(i_, tok.size()) != tok) return false;
    i_ += tok.size();
    return true;
  }
  void expect(std::string_view tok) {
    if (!accept(tok)) fail("expected '" + std::string(tok) + "'");
  }
  std::string identifier() {
    skip_space();
    size_t b = i_;
    while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_'))
      ++i_;
    if (b == i_ || std::isdigit(static_cast<unsigned char>(s_[b]))) fail("expected a name");
    return std::string(s_.substr(b, i_ - b));
  }
  int64_t integer() {
    skip_space();
    bool neg = i_ < s_.size() && s_[i_] == '-';
    if (neg) ++i_;
    size_t b = i_;
    uint64_t v = 0;
    while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) {
      uint64_t d = uint64_t(s_[i_] - '0');
      if (v > (uint64_t(std::numeric_limits<int64_t>::max()) - d) / 10) fail("integer overflow");
      v = v * 10 + d;
      ++i_;
    }
    if (b == i_) fail("expected an integer");
    return neg ? -int64_t(v) : int64_t(v);
  }
  // A decimal number: an integer, or a float when it has a point or an exponent (or is inf/nan).
  SymExpr number() {
    skip_space();
    size_t b = i_;
    if (i_ < s_.size() && (s_[i_] == '-' || s_[i_] == '+')) ++i_;
    while (i_ < s_.size() &&
           (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '.' ||
            ((s_[i_] == '-' || s_[i_] == '+') && (s_[i_ - 1] == 'e' || s_[i_ - 1] == 'E'))))
      ++i_;
    std::string text(s_.substr(b, i_ - b));
    bool real = text.find_first_of(".eEni") != std::string::npos; // 1.5, 1e-3, inf, nan
    if (!real) {
      i_ = b;
      return SymExpr::constant(integer());
    }
    char* end = nullptr;
    double v = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size()) {
      i_ = b;
      fail("expected a number");
    }
    return SymExpr::floating(v);
  }
  // Skips a quoted string ('s77') and returns its contents.
  std::string quoted() {
    skip_space();
    if (i_ >= s_.size() || (s_[i_] != '\'' && s_[i_] != '"')) fail("expected a quoted name");
    char q = s_[i_++];
    size_t b = i_;
    while (i_ < s_.size() && s_[i_] != q) ++i_;
    if (i_ >= s_.size()) fail("unterminated string");
    return std::string(s_.substr(b, i_++ - b));
  }
  // Nesting depth, bounded so that hostile text cannot exhaust the stack.
  void enter() {
    if (++depth_ > kMaxDepth) fail("nested deeper than " + std::to_string(kMaxDepth) + " levels");
  }
  void leave() { --depth_; }
  // Skips "key=value" assumptions (positive=True, integer=True, precision=53).
  void skip_keyword_args() {
    while (accept(",")) {
      identifier();
      expect("=");
      if (std::isdigit(static_cast<unsigned char>(peek())) || peek() == '-')
        number();
      else if (peek() == '\'' || peek() == '"')
        quoted();
      else
        identifier();
    }
  }

private:
  static constexpr int kMaxDepth = 256;
  std::string_view s_;
  const char* form_;
  size_t i_ = 0;
  int depth_ = 0;
};

// Counts one nesting level of a parse for as long as it lives.
struct Nest {
  explicit Nest(Cursor& c) : c_(c) { c_.enter(); }
  ~Nest() { c_.leave(); }
  Cursor& c_;
};

SymExpr floordiv(SymExpr a, SymExpr b) {
  return SymExpr::apply(SymExpr::Op::FloorDiv, {std::move(a), std::move(b)});
}
SymExpr mod(SymExpr a, SymExpr b) {
  return SymExpr::apply(SymExpr::Op::Mod, {std::move(a), std::move(b)});
}

SymExpr sympy_expr(Cursor& c) {
  Nest nest(c);
  std::string head = c.identifier();
  c.expect("(");
  auto operands = [&] {
    std::vector<SymExpr> args;
    if (c.peek() != ')') {
      args.push_back(sympy_expr(c));
      while (c.accept(",")) args.push_back(sympy_expr(c));
    }
    c.expect(")");
    return args;
  };
  auto arity = [&](const std::vector<SymExpr>& args, size_t lo, size_t hi) {
    if (args.size() < lo || args.size() > hi)
      c.fail(head + " takes " + std::to_string(lo) + (lo == hi ? "" : " or more") + " operands");
  };
  using Op = SymExpr::Op;
  if (head == "Symbol") {
    std::string name = c.quoted();
    c.skip_keyword_args();
    c.expect(")");
    return SymExpr::symbol(name);
  }
  if (head == "Integer") {
    int64_t v = c.integer();
    c.expect(")");
    return SymExpr::constant(v);
  }
  if (head == "Float") { // Float('1.5', precision=53)
    std::string text = c.quoted();
    c.skip_keyword_args();
    c.expect(")");
    Cursor num(text, "sympy Float");
    SymExpr v = num.number();
    if (!num.at_end()) c.fail("'" + text + "' is not a float");
    return v.op == Op::Float ? v : SymExpr::floating(double(v.value));
  }
  if (head == "Rational") { // Rational(3, 2)
    int64_t p = c.integer();
    c.expect(",");
    int64_t q = c.integer();
    c.expect(")");
    if (q == 0) c.fail("Rational with a zero denominator");
    return SymExpr::apply(Op::TrueDiv, {SymExpr::constant(p), SymExpr::constant(q)});
  }
  std::vector<SymExpr> args = operands();
  auto unary = [&](Op op) {
    arity(args, 1, 1);
    return SymExpr::apply(op, std::move(args));
  };
  if (head == "ToFloat") return unary(Op::ToFloat);
  if (head == "TruncToInt") return unary(Op::TruncToInt);
  if (head == "FloorToInt") return unary(Op::FloorToInt);
  if (head == "CeilToInt") return unary(Op::CeilToInt);
  if (head == "RoundToInt") return unary(Op::RoundToInt);
  if (head == "TruncToFloat") { // trunc, still a float
    arity(args, 1, 1);
    return SymExpr::apply(Op::ToFloat, {SymExpr::apply(Op::TruncToInt, std::move(args))});
  }
  if (head == "Identity") {
    arity(args, 1, 1);
    return args[0];
  }
  if (head == "IntTrueDiv" || head == "FloatTrueDiv") {
    arity(args, 2, 2);
    return SymExpr::apply(Op::TrueDiv, std::move(args));
  }
  if (head == "FloatPow" || head == "PowByNatural") {
    arity(args, 2, 2);
    return SymExpr::apply(Op::Pow, std::move(args));
  }
  if (head == "LShift" || head == "RShift") { // a * 2**b, a // 2**b
    arity(args, 2, 2);
    SymExpr p = SymExpr::apply(Op::Pow, {SymExpr::constant(2), args[1]});
    return head == "LShift" ? SymExpr::apply(Op::Mul, {args[0], p}) : floordiv(args[0], p);
  }
  if (head == "Add" || head == "Mul" || head == "Max" || head == "Min") {
    arity(args, 2, SIZE_MAX);
    Op op = head == "Add" ? Op::Add : head == "Mul" ? Op::Mul : head == "Max" ? Op::Max : Op::Min;
    return SymExpr::apply(op, std::move(args));
  }
  if (head == "Pow") { // a negative exponent is a float (sympy writes a / b as a * b**-1)
    arity(args, 2, 2);
    return SymExpr::apply(Op::Pow, std::move(args));
  }
  if (head == "FloorDiv" || head == "CleanDiv") {
    arity(args, 2, 2);
    return floordiv(args[0], args[1]);
  }
  if (head == "Mod" || head == "PythonMod") {
    arity(args, 2, 2);
    return mod(args[0], args[1]);
  }
  if (head == "CeilDiv") { // ceil(a / b) = -((-a) // b)
    arity(args, 2, 2);
    SymExpr minus_one = SymExpr::constant(-1);
    SymExpr neg_a = SymExpr::apply(Op::Mul, {minus_one, args[0]});
    return SymExpr::apply(Op::Mul, {minus_one, floordiv(neg_a, args[1])});
  }
  if (head == "ModularIndexing") { // (a // b) % c
    arity(args, 3, 3);
    return mod(floordiv(args[0], args[1]), args[2]);
  }
  c.fail("'" + head + "' is not a size expression fxc understands");
}

// Infix: sum := product (('+' | '-') product)*; product := power (('*' | '//' | '%') power)*;
// power := atom ('**' integer)?; atom := integer | name | '-' atom | '(' sum ')' | Max(...) |
// Min(...).
SymExpr text_sum(Cursor& c);

SymExpr text_atom(Cursor& c) {
  Nest nest(c);
  char ch = c.peek();
  if (ch == '(') {
    c.expect("(");
    SymExpr e = text_sum(c);
    c.expect(")");
    return e;
  }
  if (ch == '-') {
    c.expect("-");
    if (std::isdigit(static_cast<unsigned char>(c.peek()))) {
      SymExpr v = c.number();
      if (v.op == SymExpr::Op::Float) return SymExpr::floating(-v.real);
      return SymExpr::constant(-v.value);
    }
    return SymExpr::apply(SymExpr::Op::Mul, {SymExpr::constant(-1), text_atom(c)});
  }
  if (std::isdigit(static_cast<unsigned char>(ch))) return c.number();
  std::string name = c.identifier();
  if (name == "inf" || name == "nan") return SymExpr::floating(name == "inf" ? HUGE_VAL : NAN);
  static const std::pair<const char*, SymExpr::Op> kUnary[] = {
      {"ToFloat", SymExpr::Op::ToFloat},
      {"TruncToInt", SymExpr::Op::TruncToInt},
      {"FloorToInt", SymExpr::Op::FloorToInt},
      {"CeilToInt", SymExpr::Op::CeilToInt},
      {"RoundToInt", SymExpr::Op::RoundToInt}};
  for (const auto& [fn, op] : kUnary)
    if (name == fn) {
      c.expect("(");
      SymExpr a = text_sum(c);
      c.expect(")");
      return SymExpr::apply(op, {std::move(a)});
    }
  if (name == "Max" || name == "Min") {
    c.expect("(");
    std::vector<SymExpr> args{text_sum(c)};
    while (c.accept(",")) args.push_back(text_sum(c));
    c.expect(")");
    if (args.size() < 2) c.fail(name + " takes two or more operands");
    return SymExpr::apply(name == "Max" ? SymExpr::Op::Max : SymExpr::Op::Min, std::move(args));
  }
  return SymExpr::symbol(name);
}

SymExpr text_power(Cursor& c) {
  SymExpr base = text_atom(c);
  if (!c.accept("**")) return base;
  return SymExpr::apply(SymExpr::Op::Pow, {std::move(base), text_atom(c)});
}

SymExpr text_product(Cursor& c) {
  SymExpr e = text_power(c);
  std::vector<SymExpr> factors{e};
  for (;;) {
    if (c.accept("//")) {
      SymExpr lhs = factors.size() == 1 ? factors[0] : SymExpr::apply(SymExpr::Op::Mul, factors);
      factors = {floordiv(lhs, text_power(c))};
    } else if (c.accept("%")) {
      SymExpr lhs = factors.size() == 1 ? factors[0] : SymExpr::apply(SymExpr::Op::Mul, factors);
      factors = {mod(lhs, text_power(c))};
    } else if (c.accept("/")) {
      SymExpr lhs = factors.size() == 1 ? factors[0] : SymExpr::apply(SymExpr::Op::Mul, factors);
      factors = {SymExpr::apply(SymExpr::Op::TrueDiv, {lhs, text_power(c)})};
    } else if (c.peek() == '*') {
      c.expect("*");
      factors.push_back(text_power(c));
    } else {
      break;
    }
  }
  return factors.size() == 1 ? factors[0] : SymExpr::apply(SymExpr::Op::Mul, factors);
}

SymExpr text_sum(Cursor& c) {
  std::vector<SymExpr> terms{text_product(c)};
  for (;;) {
    if (c.accept("+")) {
      terms.push_back(text_product(c));
    } else if (c.peek() == '-') {
      c.expect("-");
      SymExpr t = text_product(c);
      if (t.op == SymExpr::Op::Const)
        terms.push_back(SymExpr::constant(-t.value));
      else if (t.op == SymExpr::Op::Float)
        terms.push_back(SymExpr::floating(-t.real));
      else
        terms.push_back(SymExpr::apply(SymExpr::Op::Mul, {SymExpr::constant(-1), t}));
    } else {
      break;
    }
  }
  return terms.size() == 1 ? terms[0] : SymExpr::apply(SymExpr::Op::Add, terms);
}

// Precedence for parenthesizing: sum 1, product 2, power 3, atom 4.
int precedence(const SymExpr& e) {
  switch (e.op) {
  case SymExpr::Op::Add:
    return 1;
  case SymExpr::Op::Mul:
  case SymExpr::Op::FloorDiv:
  case SymExpr::Op::Mod:
  case SymExpr::Op::TrueDiv:
    return 2;
  case SymExpr::Op::Pow:
    return 3;
  case SymExpr::Op::Const:
    return e.value < 0 ? 2 : 4;
  case SymExpr::Op::Float:
    return std::signbit(e.real) ? 2 : 4;
  default:
    return 4;
  }
}

std::string format_at(const SymExpr& e, int min_prec) {
  std::string s = format_sym(e);
  return precedence(e) < min_prec ? "(" + s + ")" : s;
}

// The shortest text that reads back as `v`, always with a point or an exponent ("1.5", "2.0",
// "1e+300", "inf", "nan"), so that it reads back as a float.
std::string format_real(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, r.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

// A number as an expression evaluates to it: an integer or a float.
struct Num {
  bool real = false;
  int64_t i = 0;
  double f = 0;
  double as_double() const { return real ? f : double(i); }
};

// A float rounded to an integer by `round`, or nullopt outside int64's range (or NaN).
template <class F> std::optional<Num> to_int(const Num& x, F round) {
  double r = x.real ? round(x.f) : double(x.i);
  if (!x.real) return x;
  if (!(r >= -9.2233720368547758e18 && r < 9.2233720368547758e18)) return std::nullopt;
  return Num{false, int64_t(r), 0};
}

// a*b with overflow reported as nullopt.
std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

} // namespace

SymExpr parse_sympy(std::string_view text) {
  Cursor c(text, "sympy");
  SymExpr e = sympy_expr(c);
  if (!c.at_end()) c.fail("unexpected text after the expression");
  return e;
}

SymExpr parse_sym_text(std::string_view text) {
  Cursor c(text, "size");
  if (c.at_end()) c.fail("empty expression");
  SymExpr e = text_sum(c);
  if (!c.at_end()) c.fail("unexpected text after the expression");
  return e;
}

std::string format_sym(const SymExpr& e) {
  using Op = SymExpr::Op;
  switch (e.op) {
  case Op::None:
    return "?";
  case Op::Const:
    return std::to_string(e.value);
  case Op::Symbol:
    return e.name;
  case Op::Add: {
    std::string s = format_at(e.args[0], 1);
    for (size_t i = 1; i < e.args.size(); ++i) {
      const SymExpr& t = e.args[i];
      if (t.op == Op::Const && t.value < 0)
        s += " - " + std::to_string(-t.value);
      else
        s += " + " + format_at(t, 2);
    }
    return s;
  }
  case Op::Mul: {
    std::string s;
    for (size_t i = 0; i < e.args.size(); ++i) s += (i ? "*" : "") + format_at(e.args[i], 3);
    return s;
  }
  case Op::FloorDiv:
    return format_at(e.args[0], 2) + "//" + format_at(e.args[1], 3);
  case Op::Mod:
    return format_at(e.args[0], 2) + "%" + format_at(e.args[1], 3);
  case Op::Pow:
    return format_at(e.args[0], 4) + "**" + format_at(e.args[1], 4);
  case Op::Float:
    return format_real(e.real);
  case Op::TrueDiv:
    return format_at(e.args[0], 2) + "/" + format_at(e.args[1], 3);
  case Op::ToFloat:
    return "ToFloat(" + format_sym(e.args[0]) + ")";
  case Op::TruncToInt:
    return "TruncToInt(" + format_sym(e.args[0]) + ")";
  case Op::FloorToInt:
    return "FloorToInt(" + format_sym(e.args[0]) + ")";
  case Op::CeilToInt:
    return "CeilToInt(" + format_sym(e.args[0]) + ")";
  case Op::RoundToInt:
    return "RoundToInt(" + format_sym(e.args[0]) + ")";
  case Op::Max:
  case Op::Min: {
    std::string s = e.op == Op::Max ? "Max(" : "Min(";
    for (size_t i = 0; i < e.args.size(); ++i) s += (i ? ", " : "") + format_sym(e.args[i]);
    return s + ")";
  }
  }
  return "?";
}

namespace {

std::optional<Num> eval_num(const SymExpr& e, const SymBindings& b) {
  using Op = SymExpr::Op;
  switch (e.op) {
  case Op::None:
    return std::nullopt;
  case Op::Const:
    return Num{false, e.value, 0};
  case Op::Float:
    return Num{true, 0, e.real};
  case Op::Symbol: {
    auto it = b.find(e.name);
    if (it == b.end()) return std::nullopt;
    return Num{false, it->second, 0};
  }
  default:
    break;
  }
  std::vector<Num> v;
  bool real = false;
  for (const SymExpr& a : e.args) {
    std::optional<Num> x = eval_num(a, b);
    if (!x) return std::nullopt;
    real = real || x->real;
    v.push_back(*x);
  }
  auto floating = [](double f) { return std::optional<Num>(Num{true, 0, f}); };
  switch (e.op) {
  case Op::Add: {
    if (real) {
      double r = 0;
      for (const Num& x : v) r += x.as_double();
      return floating(r);
    }
    int64_t r = 0;
    for (const Num& x : v)
      if (__builtin_add_overflow(r, x.i, &r)) return std::nullopt;
    return Num{false, r, 0};
  }
  case Op::Mul: {
    if (real) {
      double r = 1;
      for (const Num& x : v) r *= x.as_double();
      return floating(r);
    }
    int64_t r = 1;
    for (const Num& x : v) {
      auto m = checked_mul(r, x.i);
      if (!m) return std::nullopt;
      r = *m;
    }
    return Num{false, r, 0};
  }
  case Op::FloorDiv: { // Python's floor division
    if (real) {
      if (v[1].as_double() == 0) return std::nullopt;
      return floating(std::floor(v[0].as_double() / v[1].as_double()));
    }
    if (v[1].i == 0 || (v[0].i == INT64_MIN && v[1].i == -1)) return std::nullopt;
    int64_t q = v[0].i / v[1].i;
    if ((v[0].i % v[1].i != 0) && ((v[0].i < 0) != (v[1].i < 0))) --q;
    return Num{false, q, 0};
  }
  case Op::Mod: { // Python's modulo: the sign of the divisor
    if (real) {
      double a = v[0].as_double(), m = v[1].as_double();
      if (m == 0) return std::nullopt;
      double r = std::fmod(a, m);
      if (r != 0 && ((r < 0) != (m < 0))) r += m;
      return floating(r);
    }
    if (v[1].i == 0 || (v[0].i == INT64_MIN && v[1].i == -1)) return std::nullopt;
    int64_t r = v[0].i % v[1].i;
    if (r != 0 && ((r < 0) != (v[1].i < 0))) r += v[1].i;
    return Num{false, r, 0};
  }
  case Op::Pow: {
    if (real || v[1].i < 0) return floating(std::pow(v[0].as_double(), v[1].as_double()));
    int64_t base = v[0].i, r = 1;
    if (base == 0 || base == 1) return Num{false, v[1].i == 0 ? 1 : base, 0};
    if (base == -1) return Num{false, v[1].i % 2 ? -1 : 1, 0};
    for (int64_t k = 0; k < v[1].i; ++k) { // |base| >= 2: overflows within 63 steps
      auto m = checked_mul(r, base);
      if (!m) return std::nullopt;
      r = *m;
    }
    return Num{false, r, 0};
  }
  case Op::Max:
  case Op::Min: {
    Num r = v[0];
    for (const Num& x : v) {
      bool more = x.real || r.real ? x.as_double() > r.as_double() : x.i > r.i;
      bool less = x.real || r.real ? x.as_double() < r.as_double() : x.i < r.i;
      if (e.op == Op::Max ? more : less) r = x;
    }
    return r;
  }
  case Op::ToFloat:
    return floating(v[0].as_double());
  case Op::TrueDiv:
    if (v[1].as_double() == 0) return std::nullopt;
    return floating(v[0].as_double() / v[1].as_double());
  case Op::TruncToInt:
    return to_int(v[0], [](double x) { return std::trunc(x); });
  case Op::FloorToInt:
    return to_int(v[0], [](double x) { return std::floor(x); });
  case Op::CeilToInt:
    return to_int(v[0], [](double x) { return std::ceil(x); });
  case Op::RoundToInt: // ties to even, as Python's round()
    return to_int(v[0], [](double x) {
      double f = std::floor(x), d = x - f;
      return d > 0.5 || (d == 0.5 && std::fmod(f, 2.0) != 0) ? f + 1 : f;
    });
  default:
    return std::nullopt;
  }
}

} // namespace

std::optional<int64_t> evaluate(const SymExpr& e, const SymBindings& b) {
  std::optional<Num> n = eval_num(e, b);
  if (!n || n->real) return std::nullopt;
  return n->i;
}

void collect_symbols(const SymExpr& e, std::set<std::string>& out) {
  if (e.op == SymExpr::Op::Symbol) out.insert(e.name);
  for (const SymExpr& a : e.args) collect_symbols(a, out);
}

std::vector<SymExpr> symbolic_contiguous_strides(const std::vector<int64_t>& sizes,
                                                 const std::vector<SymExpr>& sym) {
  std::vector<SymExpr> out(sizes.size());
  if (sym.size() != sizes.size()) return {};
  int64_t c = 1;
  std::vector<SymExpr> factors;
  bool any = false;
  for (size_t d = sizes.size(); d-- > 0;) {
    if (!factors.empty()) {
      std::vector<SymExpr> f;
      if (c != 1) f.push_back(SymExpr::constant(c));
      f.insert(f.end(), factors.rbegin(), factors.rend());
      out[d] = f.size() == 1 ? f[0] : SymExpr::apply(SymExpr::Op::Mul, f);
      any = true;
    }
    if (sym[d].empty())
      c *= sizes[d];
    else
      factors.push_back(sym[d]);
  }
  if (!any) return {};
  return out;
}

std::string format_range(const SymbolRange& r) {
  return r.name + " in [" + std::to_string(r.min) + ", " +
         (r.max == INT64_MAX ? std::string("inf") : std::to_string(r.max)) + "]" +
         (r.unbacked ? " (data-dependent)" : "");
}

} // namespace fxc
