// Symbolic sizes: integer expressions over shape symbols ("s77", "4*s77", "s27*s77"), as
// torch.export writes them for graphs exported with dynamic_shapes, with each symbol's range.
//
// Two text forms are read. The .pt2 archive spells an expression as sympy's srepr
// ("Mul(Integer(4), Symbol('s77', positive=True, integer=True))"); fxc prints and reads an
// infix form ("4*s77", "(s0 + 1)//2", "Max(s0, 2)") in graph printouts, .fxg files and
// diagnostics. The operators are those torch's shape environment uses for sizes: +, *, floor
// division, modulo, integer powers, Max and Min, and the float steps of a size computed from a
// scale factor (upsampling by 1.5: "TruncToInt(1.5*ToFloat(s0))"): float literals, ToFloat,
// true division ("/"), and TruncToInt, FloorToInt, CeilToInt, RoundToInt back to an integer.
//
//   SymExpr e = parse_sym_text("4*s0 + 1");          // throws SymError on bad text
//   int64_t v = evaluate(e, {{"s0", 3}}).value();     // 13
//   std::string s = format_sym(e);                    // "4*s0 + 1"
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace fxc {

/// A bad expression (the message says what and where); callers add the file and node.
class SymError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

struct SymExpr {
  enum class Op : uint8_t {
    None,
    Const,
    Symbol,
    Add,
    Mul,
    FloorDiv,
    Mod,
    Pow,
    Max,
    Min,
    Float,      ///< a float literal (`real`)
    ToFloat,    ///< the integer operand as a float
    TrueDiv,    ///< a / b as floats
    TruncToInt, ///< float -> integer, toward zero
    FloorToInt,
    CeilToInt,
    RoundToInt ///< to the nearest integer, ties to even (Python's round)
  };
  Op op = Op::None;
  int64_t value = 0;         ///< Const
  double real = 0;           ///< Float
  std::string name;          ///< Symbol
  std::vector<SymExpr> args; ///< operands (Add, Mul, Max, Min: two or more; ToFloat and the
                             ///< *ToInt: one; the others: two)

  static SymExpr constant(int64_t v);
  static SymExpr floating(double v);
  static SymExpr symbol(std::string name);
  static SymExpr apply(Op op, std::vector<SymExpr> args);

  /// No expression: a static size (TensorMeta::sym_sizes entries, Arg::syms entries).
  bool empty() const { return op == Op::None; }
  bool is_symbol() const { return op == Op::Symbol; }
  bool operator==(const SymExpr& o) const;
  bool operator!=(const SymExpr& o) const { return !(*this == o); }
};

/// Values of the symbols, by name.
using SymBindings = std::map<std::string, int64_t, std::less<>>;

/// One symbol of a dynamic graph: its range (inclusive; max INT64_MAX is unbounded, torch's
/// int_oo) and its hint, the size the graph was exported (and is compiled) at.
///
/// An unbacked symbol (torch's u0, u1, ...) is a data-dependent size: the number of elements
/// nonzero, masked_select or unique find. It has no hint (`hint` is its minimum, a placeholder);
/// its value is known only when the node that produces it has run, so only the eager
/// interpreter runs such graphs.
struct SymbolRange {
  std::string name;
  int64_t min = 0;
  int64_t max = INT64_MAX;
  int64_t hint = 0;
  bool unbacked = false;
  bool operator==(const SymbolRange& o) const {
    return name == o.name && min == o.min && max == o.max && hint == o.hint &&
           unbacked == o.unbacked;
  }
};

/// Parses sympy's srepr form as torch.export writes it (Symbol, Integer, Add, Mul, Pow,
/// PowByNatural, FloorDiv, CleanDiv, Mod, PythonMod, ModularIndexing, CeilDiv, LShift, RShift,
/// Max, Min, Identity; Float, Rational, ToFloat, IntTrueDiv, FloatTrueDiv, FloatPow,
/// TruncToFloat, TruncToInt, FloorToInt, CeilToInt, RoundToInt). Throws SymError.
SymExpr parse_sympy(std::string_view text);
/// Parses fxc's infix form (what format_sym prints). Throws SymError.
SymExpr parse_sym_text(std::string_view text);
/// The infix form: "s0", "4*s0", "s27*s77", "(s0 + 1)//2", "Max(s0, 2)"; parse_sym_text reads it.
std::string format_sym(const SymExpr& e);
/// The value under `b`; std::nullopt when a symbol is unbound, a division by zero or an
/// overflow occurs, or the value is a float (a size is an integer).
std::optional<int64_t> evaluate(const SymExpr& e, const SymBindings& b);
/// Adds every symbol `e` names to `out`.
void collect_symbols(const SymExpr& e, std::set<std::string>& out);
/// Row-major strides of a tensor whose dims are `sizes` (values at the hints) and `sym` (their
/// expressions; empty entries static): an empty entry where a stride is static, else the
/// product of the symbolic sizes after it times the static ones ("128*s27").
std::vector<SymExpr> symbolic_contiguous_strides(const std::vector<int64_t>& sizes,
                                                 const std::vector<SymExpr>& sym);
/// "s0 in [1, 4096]" ("inf" for an unbounded max).
std::string format_range(const SymbolRange& r);

} // namespace fxc
