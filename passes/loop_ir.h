// The loop-level IR of the inductor backend: symbolic index expressions, value expressions and
// buffers (pointwise, reduction, extern), with a deterministic text printer.
//
// Every materialized tensor is a Buffer with contiguous row-major layout. A pointwise buffer
// computes element (x0, .., xn) as a value expression over loads of other buffers at symbolic
// element offsets; a reduction buffer folds a value expression over reduction variables r0..rk;
// an extern buffer is produced by a library call (BLAS) or a reference kernel. Views never
// become buffers: they are index arithmetic inside the loads (IndexExpr), simplified
// symbolically (floor division and modulo of affine forms over variables with known ranges).
#pragma once

#include "frontend/graph.h"
#include "frontend/scalar_fn.h"

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace fxc {

struct VExpr;
using VPtr = std::shared_ptr<const VExpr>;
class IndexExpr;

/// A non-affine piece of an index expression: a variable, a floor division or modulo of an
/// expression by a positive constant, or a data-dependent (indirect) integer value.
struct IndexAtom {
  enum class Kind : uint8_t { Var, FloorDiv, Mod, Indirect };
  Kind kind = Kind::Var;
  int id = 0;          ///< Var: the symbol id
  int64_t extent = 0;  ///< Var: values lie in [0, extent); Indirect: clamped to [0, extent)
  int64_t divisor = 0; ///< FloorDiv, Mod
  std::shared_ptr<const IndexExpr> arg; ///< FloorDiv, Mod
  VPtr value;                           ///< Indirect: an integer-valued expression
  std::string key; ///< Indirect: printed form of `value`, for ordering and equality
};

/// A symbolic integer: constant + sum(coeff * atom), kept canonical (terms sorted, no zero
/// coefficients, floor-division/modulo pairs recombined), so structurally equal expressions
/// compare equal.
class IndexExpr {
public:
  IndexExpr(int64_t c = 0) : constant_(c) {}
  /// The variable `id` ranging over [0, extent).
  static IndexExpr var(int id, int64_t extent);
  /// A data-dependent index, clamped into [0, extent) when evaluated.
  static IndexExpr indirect(VPtr value, int64_t extent);

  bool is_const() const { return terms_.empty(); }
  int64_t constant() const { return constant_; }
  const std::vector<std::pair<IndexAtom, int64_t>>& terms() const { return terms_; }
  /// The coefficient of variable `id` when the expression is affine in plain variables.
  bool is_affine() const;
  int64_t coeff_of_var(int id) const;

  friend IndexExpr operator+(const IndexExpr& a, const IndexExpr& b);
  friend IndexExpr operator-(const IndexExpr& a, const IndexExpr& b);
  friend IndexExpr operator*(const IndexExpr& a, int64_t c);
  /// floor(this / d), d > 0, simplified using the ranges of the variables.
  IndexExpr floordiv(int64_t d) const;
  /// this mod d (result in [0, d)), d > 0, simplified likewise.
  IndexExpr mod(int64_t d) const;
  /// Inclusive bounds over all values of the variables (saturating).
  std::pair<int64_t, int64_t> range() const;
  /// Replaces variables simultaneously (also inside indirect values).
  IndexExpr substitute(const std::map<int, IndexExpr>& subst) const;

  std::string str() const;
  bool operator==(const IndexExpr& o) const;
  bool operator!=(const IndexExpr& o) const { return !(*this == o); }

private:
  void add_term(const IndexAtom& a, int64_t c);
  void canonicalize();
  int64_t constant_ = 0;
  std::vector<std::pair<IndexAtom, int64_t>> terms_;
};

/// Total order on atoms (deterministic, structural).
int compare_atoms(const IndexAtom& a, const IndexAtom& b);

/// Operations of value expressions.
enum class VOp : uint8_t {
  Const,
  Load,
  Index,
  Cast, // leaves and conversion
  Neg,
  Abs,
  Exp,
  Log,
  Sqrt,
  Rsqrt,
  Tanh,
  Sigmoid,
  Erf,
  Not,
  Log1p,
  Expm1,
  Sin,
  Cos,
  Floor,
  Ceil,
  Round,
  Trunc,  // round toward zero
  BitNot, // ~ (bool: logical not)
  Tan,
  Asin,
  Acos,
  Atan,
  Sinh,
  Cosh,
  Asinh,
  Acosh,
  Atanh,
  Log2,
  Log10,
  Reciprocal, // unary
  Add,
  Sub,
  Mul,
  Div,
  FloorDivide,
  Fmod,        // C fmod: the sign of the dividend (int: 0 for a zero divisor)
  Remainder,   // Python %: the sign of the divisor (int: 0 for a zero divisor)
  TruncDivide, // division rounded toward zero (int: 0 for a zero divisor)
  BitAnd,
  BitOr,
  BitXor,
  Shl, // PyTorch's <<: 0 for a negative amount or one of the width or more
  Shr, // PyTorch's >>: the sign fill for a negative amount or one of the width or more
  Atan2,
  Pow,
  Max,
  Min,
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge,
  And,
  Or,    // binary
  Where, // ternary
  Call,  // a scalar helper function (frontend/scalar_fn.h): ival is its ScalarFn
};
std::string_view vop_name(VOp op);
bool vop_is_unary(VOp op);
bool vop_is_binary(VOp op);
bool vop_is_compare(VOp op);

/// One node of a value expression (an immutable DAG; shared subexpressions are computed once).
struct VExpr {
  VOp op = VOp::Const;
  DType dtype = DType::F32; ///< the type of the result (Bool for comparisons)
  double fval = 0;          ///< Const (floating types)
  int64_t ival = 0;         ///< Const (integral and bool types); Call: the ScalarFn
  int buffer = -1;          ///< Load: buffer id
  IndexExpr index;          ///< Load: element offset into the buffer; Index: the value
  std::vector<VPtr> args;
};

VPtr v_const(double v, DType t);
VPtr v_load(int buffer, IndexExpr index, DType t);
VPtr v_index(IndexExpr index, DType t);
VPtr v_cast(VPtr a, DType t);
VPtr v_unary(VOp op, VPtr a);
/// Both operands must have the same dtype; comparisons give Bool.
VPtr v_binary(VOp op, VPtr a, VPtr b);
VPtr v_where(VPtr cond, VPtr a, VPtr b);
/// f(args): operands of one floating dtype (F32 or F64), the result of that dtype. Code
/// generation emits f once per module as a function with its own control flow (loops with
/// data-dependent trip counts), which an expression of the other operations cannot express.
VPtr v_call(ScalarFn f, std::vector<VPtr> args);
/// Replaces variables in every index of the expression.
VPtr substitute(const VPtr& e, const std::map<int, IndexExpr>& subst);
/// Calls f(load) for every Load node (each node once, in DFS order, indirect indices included).
void for_each_load(const VPtr& e, const std::function<void(const VExpr&)>& f);
/// Number of distinct nodes.
int expr_size(const VPtr& e);
/// Whether index `e` reads loop variable `id` (through floor divisions, moduli and indirect
/// values too).
bool index_uses_var(const IndexExpr& e, int id);
/// Whether value expression `e` reads loop variable `id` (in a load's or index_expr's index).
bool value_uses_var(const VExpr& e, int id);

enum class ReduceOp : uint8_t { Sum, Max, Min, Any, ArgMax, ArgMin, Prod };
std::string_view reduce_op_name(ReduceOp op);

/// An operand of an extern call: a strided view of a buffer.
struct ExternOperand {
  int buffer = -1;
  std::vector<int64_t> sizes, strides;
  int64_t offset = 0;
};

/// A call to a library or reference kernel. Outputs are contiguous buffers.
/// What a Gemm call applies to the product before writing it (a cuBLASLt epilogue; CUDA only).
/// BiasResidual adds the bias and a residual laid out as the result (cuBLASLt's C, beta = 1).
enum class GemmEpilogue : uint8_t { None, Bias, ReluBias, GeluTanhBias, BiasResidual };
/// "bias", "relu_bias", "gelu_tanh_bias", "bias_residual" ("none" for None).
const char* gemm_epilogue_name(GemmEpilogue e);
struct ExternCall;
/// How IR dumps name a call's kind: " (blas)", " (blas, epilogue relu_bias)",
/// " (cudnn, stride [1, 1], padding [0, 0], dilation [1, 1], groups 1)", " (fallback)".
std::string extern_kind_suffix(const ExternCall& c);

struct ExternCall {
  /// Gemm: BLAS. Fallback: the reference kernel. Conv: convolution (cuDNN, 2-D; oneDNN on the CPU,
  /// 1-D to 3-D).
  /// ConvBackwardData / ConvBackwardFilter: a convolution's input / weight gradient (cuDNN, 2-D,
  /// op "convolution_backward_data" / "convolution_backward_filter"; oneDNN on the CPU, 1-D to
  /// 3-D float32, op "onednn_convolution_backward_data" / "onednn_convolution_backward_filter").
  /// Attention: fused scaled-dot-product attention (cuDNN, CUDA plans only; op
  /// "scaled_dot_product_attention").
  enum class Kind : uint8_t {
    Gemm,
    Fallback,
    Conv,
    ConvBackwardData,
    ConvBackwardFilter,
    Attention
  };
  Kind kind = Kind::Fallback;
  std::string op; ///< "mm", "bmm", "addmm", "convolution", or the fallback node's target
  /// Gemm: A, B (batched for bmm), then the bias [N] when the epilogue has one, then the
  /// residual [M, N] (row-major, as the result) for BiasResidual.
  /// Conv: x, w (contiguous), then the bias [K] when there is one. ConvBackwardData: dy, w;
  /// ConvBackwardFilter: x, dy (contiguous; the stride, padding, dilation and groups are the
  /// forward convolution's). Attention: q [B, H, Sq, D], k [B, Hkv, Skv, D],
  /// v [B, Hkv, Skv, Dv] (strided, the last dim unit-stride), then the additive bias
  /// [B or 1, H or 1, Sq, Skv] (contiguous) when there is a mask; the result buffer is
  /// [B, Sq, H, Dv].
  std::vector<ExternOperand> operands;
  GemmEpilogue epilogue = GemmEpilogue::None; ///< Gemm only
  /// Conv only: one value per spatial dim each ({h, w} for cuDNN), and the group count.
  std::vector<int64_t> stride{1, 1}, padding{0, 0}, dilation{1, 1};
  int64_t groups = 1;
  /// Conv on CUDA: x and w are channels-last ([N, C, H, W] with NHWC strides) and the result
  /// buffer is [N, OH, OW, K] (NHWC); no bias operand.
  bool channels_last = false;
  /// Conv on the CPU (oneDNN): fused post-ops, as PlanExtern::post_ops spells them.
  std::string post_ops;
  /// Conv on the CPU: per-output-channel y = scale · conv + shift before the post-ops (a folded
  /// inference batch norm); empty: none. See PlanExtern::scale.
  std::vector<float> scale, shift;
  /// Attention only: the factor of q·kᵀ, and whether query i sees only keys j <= i.
  double attn_scale = 1;
  bool causal = false;
  std::vector<int> outputs; ///< buffer ids written (the first is the owning buffer)
  /// Fallback: a one-node graph whose user inputs are `operands` in order, outputs in order.
  std::shared_ptr<const Graph> graph;
  std::string reason; ///< Fallback: why the node has no generated code ("no lowering", ...)
};

struct Buffer {
  enum class Kind : uint8_t { Input, Pointwise, Reduction, Extern, ExternOutput };
  Kind kind = Kind::Pointwise;
  std::string name; ///< "buf3", or "arg0_1"/"p_fc1_weight" for inputs
  DType dtype = DType::F32;
  std::vector<int64_t> sizes;          ///< contiguous row-major
  std::vector<std::string> origins;    ///< graph nodes computed here ("addmm", "relu", ...)
  std::vector<std::string> origin_ops; ///< op base names, each once ("addmm", "relu")
  // Pointwise / Reduction
  std::vector<IndexExpr> vars;  ///< one variable per output dim
  std::vector<IndexExpr> rvars; ///< Reduction: one variable per reduced dim
  std::vector<int64_t> rsizes;  ///< Reduction: extent of each reduced dim
  VPtr body;                    ///< value per element (per reduction step)
  ReduceOp reduce = ReduceOp::Sum;
  // Input
  int input_index = -1; ///< position among the graph's user inputs, or -1
  std::string weight;   ///< fqn of a parameter/buffer/constant
  // Extern / ExternOutput
  ExternCall call;       ///< Extern
  int extern_owner = -1; ///< ExternOutput: the Extern buffer that writes it

  int64_t numel() const;
  int64_t rnumel() const; ///< product of reduction extents (1 for non-reductions)
  int64_t nbytes() const { return numel() * int64_t(dtype_size(dtype)); }
};

/// A graph output: a strided view of a buffer.
struct OutputView {
  int buffer = -1;
  TensorMeta meta; ///< sizes, strides and offset into the buffer
};

struct LoopProgram {
  std::string source;
  std::vector<Buffer> buffers;
  std::vector<OutputView> outputs;
  std::vector<std::string> log; ///< lowering decisions (fallbacks, realizations)
  /// Testing only: node names with a planted "compile_error" or "runtime_error" bug.
  std::map<std::string, std::string> injected;

  /// Buffers that `b` reads (sorted, unique), including extern operands.
  std::vector<int> reads(int b) const;
};

/// Symbol ids: variables of buffer dims are 0.., reduction variables kRVarBase.., the kernel's
/// outer and inner loop variables kXVar and kRVar.
constexpr int kRVarBase = 1000;
constexpr int kXVar = 2000;
constexpr int kRVar = 2001;
std::string var_name(int id);

/// Row-major linear offset of `idx` in a tensor of `sizes` with `strides`.
IndexExpr linear_index(const std::vector<IndexExpr>& idx, const std::vector<int64_t>& strides,
                       int64_t offset = 0);
/// Splits a linear index over row-major `sizes` into one index per dim (all 0 when a size is 0).
std::vector<IndexExpr> unravel_index(const IndexExpr& linear, const std::vector<int64_t>& sizes);

/// Prints one value expression as "tmp" lines ending in the line that names the result.
std::string print_body(const VPtr& body, const LoopProgram& p, const std::string& indent,
                       std::string* result_name);
/// Prints every buffer: kind, dtype/sizes, reads, loop body; extern calls marked.
std::string print_loop_program(const LoopProgram& p);

} // namespace fxc
