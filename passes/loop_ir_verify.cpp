// The loop-IR verifier (see loop_ir_verify.h).
#include "passes/loop_ir_verify.h"

#include "frontend/diag.h"

#include <algorithm>
#include <functional>
#include <set>

namespace fxc {

namespace {

// Whether `e` is the loop variable `id` over [0, extent) (the constant 0 when extent is 1).
// IndexExpr's == compares the variables, not their extents.
bool is_loop_var(const IndexExpr& e, int id, int64_t extent) {
  if (e != IndexExpr::var(id, extent)) return false;
  return e.terms().empty() || e.terms()[0].first.extent == extent;
}

class Verifier {
public:
  explicit Verifier(const LoopProgram& p) : p_(p) {}

  std::vector<std::string> run() {
    std::set<std::string> names;
    for (int b = 0; b < int(p_.buffers.size()); ++b) {
      const Buffer& buf = p_.buffers[b];
      where_ = buf.name.empty() ? "buffer " + std::to_string(b) : buf.name;
      if (buf.name.empty())
        fail("buffer without a name");
      else if (!names.insert(buf.name).second)
        fail("a second buffer of this name");
      for (int64_t s : buf.sizes)
        if (s < 0) fail("negative size " + std::to_string(s));
      switch (buf.kind) {
      case Buffer::Kind::Input:
        check_input(buf);
        break;
      case Buffer::Kind::Pointwise:
      case Buffer::Kind::Reduction:
        check_computed(b, buf);
        break;
      case Buffer::Kind::Extern:
        check_extern(b, buf);
        break;
      case Buffer::Kind::ExternOutput:
        check_extern_output(b, buf);
        break;
      }
    }
    where_ = "outputs";
    for (const OutputView& o : p_.outputs) {
      if (o.buffer < 0 || o.buffer >= int(p_.buffers.size())) {
        fail("output of buffer " + std::to_string(o.buffer) + ", which does not exist");
        continue;
      }
      const Buffer& b = p_.buffers[o.buffer];
      if (o.meta.dtype != b.dtype)
        fail("output of " + b.name + " is " + std::string(dtype_name(o.meta.dtype)) +
             " but the buffer is " + std::string(dtype_name(b.dtype)));
      check_view(b, o.meta.sizes, o.meta.strides, o.meta.storage_offset,
                 "output view of " + b.name);
    }
    return errors_;
  }

private:
  void fail(const std::string& m) { errors_.push_back(where_ + ": " + m); }

  void check_input(const Buffer& b) {
    if ((b.input_index >= 0) == !b.weight.empty())
      fail("an input buffer is either a user input or a weight");
    if (b.body) fail("an input buffer has no loop body");
  }

  // A strided view must stay inside the buffer (empty views are always fine).
  void check_view(const Buffer& b, const std::vector<int64_t>& sizes,
                  const std::vector<int64_t>& strides, int64_t offset, const std::string& what) {
    if (sizes.size() != strides.size()) {
      fail(what + " has " + std::to_string(sizes.size()) + " sizes but " +
           std::to_string(strides.size()) + " strides");
      return;
    }
    int64_t lo = offset, hi = offset;
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (sizes[i] == 0) return;
      int64_t span = (sizes[i] - 1) * strides[i];
      (span < 0 ? lo : hi) += span;
    }
    if (lo < 0 || hi >= b.numel())
      fail(what + " reaches elements [" + std::to_string(lo) + ", " + std::to_string(hi) + "] of " +
           std::to_string(b.numel()));
  }

  void check_computed(int id, const Buffer& b) {
    if (b.vars.size() != b.sizes.size()) {
      fail(std::to_string(b.vars.size()) + " loop variables for " + std::to_string(b.sizes.size()) +
           " dims");
      return;
    }
    std::map<int, int64_t> extents; // the loop variables this buffer's body may use
    for (size_t i = 0; i < b.sizes.size(); ++i) {
      if (!is_loop_var(b.vars[i], int(i), b.sizes[i]))
        fail("loop variable " + std::to_string(i) + " is '" + b.vars[i].str() + "', not " +
             var_name(int(i)) + " < " + std::to_string(b.sizes[i]));
      extents[int(i)] = b.sizes[i];
    }
    bool reduction = b.kind == Buffer::Kind::Reduction;
    if (b.rvars.size() != b.rsizes.size())
      fail(std::to_string(b.rvars.size()) + " reduction variables for " +
           std::to_string(b.rsizes.size()) + " reduced dims");
    else if (!reduction && !b.rvars.empty())
      fail("a pointwise buffer with reduction variables");
    else
      for (size_t j = 0; j < b.rvars.size(); ++j) {
        int v = kRVarBase + int(j);
        if (!is_loop_var(b.rvars[j], v, b.rsizes[j]))
          fail("reduction variable " + std::to_string(j) + " is '" + b.rvars[j].str() + "', not " +
               var_name(v) + " < " + std::to_string(b.rsizes[j]));
        extents[v] = b.rsizes[j];
      }
    if (!b.body) {
      fail("a computed buffer without a body");
      return;
    }
    std::set<const VExpr*> seen;
    check_expr(id, b.body, extents, seen);
    // argmax/argmin fold values of any dtype into an int64 position.
    bool arg_reduce = reduction && (b.reduce == ReduceOp::ArgMax || b.reduce == ReduceOp::ArgMin);
    if (!arg_reduce && b.body->dtype != b.dtype)
      fail("the body is " + std::string(dtype_name(b.body->dtype)) + " but the buffer is " +
           std::string(dtype_name(b.dtype)));
  }

  void check_index(const IndexExpr& e, const std::map<int, int64_t>& extents,
                   const std::string& what) {
    for (const auto& [atom, coeff] : e.terms()) {
      (void)coeff;
      switch (atom.kind) {
      case IndexAtom::Kind::Var: {
        auto it = extents.find(atom.id);
        if (it == extents.end())
          fail(what + " uses " + var_name(atom.id) + ", which is not a loop variable here");
        else if (it->second != atom.extent)
          fail(what + " takes " + var_name(atom.id) + " < " + std::to_string(atom.extent) +
               " but the loop runs it to " + std::to_string(it->second));
        break;
      }
      case IndexAtom::Kind::FloorDiv:
      case IndexAtom::Kind::Mod:
        if (atom.divisor <= 0) fail(what + " divides by " + std::to_string(atom.divisor));
        if (atom.arg) check_index(*atom.arg, extents, what);
        break;
      case IndexAtom::Kind::Indirect:
        break;
      }
    }
  }

  void check_expr(int id, const VPtr& e, const std::map<int, int64_t>& extents,
                  std::set<const VExpr*>& seen) {
    if (!seen.insert(e.get()).second) return;
    for (const VPtr& a : e->args) check_expr(id, a, extents, seen);
    const std::string op(vop_name(e->op));
    if (e->op == VOp::Call && (e->ival < 0 || e->ival >= kScalarFnCount)) {
      fail("call of scalar function " + std::to_string(e->ival) + ", which does not exist");
      return;
    }
    size_t want_args = e->op == VOp::Const || e->op == VOp::Load || e->op == VOp::Index ? 0
                       : e->op == VOp::Where                                            ? 3
                       : e->op == VOp::Call   ? size_t(scalar_fn_arity(ScalarFn(e->ival)))
                       : vop_is_binary(e->op) ? 2
                                              : 1;
    if (e->args.size() != want_args) {
      fail(op + " with " + std::to_string(e->args.size()) + " operands, not " +
           std::to_string(want_args));
      return;
    }
    auto dt = [](const VPtr& x) { return std::string(dtype_name(x->dtype)); };
    switch (e->op) {
    case VOp::Load: {
      if (e->buffer < 0 || e->buffer >= int(p_.buffers.size())) {
        fail("load of buffer " + std::to_string(e->buffer) + ", which does not exist");
        return;
      }
      const Buffer& src = p_.buffers[e->buffer];
      if (e->buffer >= id) fail("load of " + src.name + ", which is defined after it");
      if (src.dtype != e->dtype)
        fail("load of " + src.name + " as " + dt(e) + "; the buffer is " +
             std::string(dtype_name(src.dtype)));
      check_index(e->index, extents, "load of " + src.name);
      auto [lo, hi] = e->index.range();
      if (src.numel() > 0 && (lo < 0 || hi >= src.numel()))
        fail("load of " + src.name + " at " + e->index.str() + " reaches [" + std::to_string(lo) +
             ", " + std::to_string(hi) + "], outside its " + std::to_string(src.numel()) +
             " elements");
      return;
    }
    case VOp::Index:
      check_index(e->index, extents, "index_expr");
      return;
    case VOp::Call:
      for (const VPtr& a : e->args)
        if (a->dtype != e->dtype || (e->dtype != DType::F32 && e->dtype != DType::F64))
          fail(op + " of " + dt(a) + " as " + dt(e) +
               "; operands and result must share f32 or f64");
      return;
    case VOp::Where:
      if (e->args[0]->dtype != DType::Bool) fail("where's condition is " + dt(e->args[0]));
      if (e->args[1]->dtype != e->args[2]->dtype || e->dtype != e->args[1]->dtype)
        fail("where of " + dt(e->args[1]) + " and " + dt(e->args[2]) + " as " + dt(e));
      return;
    default:
      break;
    }
    if (vop_is_binary(e->op)) {
      if (e->args[0]->dtype != e->args[1]->dtype)
        fail(op + " of " + dt(e->args[0]) + " and " + dt(e->args[1]));
      bool logical = vop_is_compare(e->op) || e->op == VOp::And || e->op == VOp::Or;
      if (logical && e->dtype != DType::Bool) fail(op + " gives " + dt(e) + ", not bool");
      if (!logical && e->dtype != e->args[0]->dtype)
        fail(op + " of " + dt(e->args[0]) + " gives " + dt(e));
    } else if (vop_is_unary(e->op)) {
      DType want = e->op == VOp::Not ? DType::Bool : e->args[0]->dtype;
      if (e->dtype != want) fail(op + " of " + dt(e->args[0]) + " gives " + dt(e));
    }
  }

  void check_extern(int id, const Buffer& b) {
    const ExternCall& c = b.call;
    for (const ExternOperand& o : c.operands) {
      if (o.buffer < 0 || o.buffer >= id) {
        fail("extern operand " + std::to_string(o.buffer) + " is not a buffer defined before it");
        continue;
      }
      check_view(p_.buffers[o.buffer], o.sizes, o.strides, o.offset,
                 "extern operand " + p_.buffers[o.buffer].name);
    }
    if (c.outputs.empty() || c.outputs[0] != id)
      fail("an extern call's first output is its own buffer");
    for (size_t i = 1; i < c.outputs.size(); ++i) {
      int o = c.outputs[i];
      if (o <= id || o >= int(p_.buffers.size()) ||
          p_.buffers[o].kind != Buffer::Kind::ExternOutput || p_.buffers[o].extern_owner != id)
        fail("extern output " + std::to_string(o) + " is not a MultiOutput of this call");
    }
  }

  void check_extern_output(int id, const Buffer& b) {
    int owner = b.extern_owner;
    if (owner < 0 || owner >= id || p_.buffers[owner].kind != Buffer::Kind::Extern) {
      fail("output of buffer " + std::to_string(owner) + ", which is not an extern call before it");
      return;
    }
    const std::vector<int>& outs = p_.buffers[owner].call.outputs;
    if (std::find(outs.begin(), outs.end(), id) == outs.end())
      fail(p_.buffers[owner].name + " does not list this buffer among its outputs");
  }

  const LoopProgram& p_;
  std::string where_;
  std::vector<std::string> errors_;
};

} // namespace

std::vector<std::string> loop_program_errors(const LoopProgram& p) {
  return Verifier(p).run();
}

void verify_loop_program(const LoopProgram& p, const std::string& when) {
  std::vector<std::string> errors = loop_program_errors(p);
  if (errors.empty()) return;
  std::string m = "loop IR is not well formed " + when + ":";
  for (const std::string& e : errors) m += "\n  " + e;
  throw Error(p.source, m);
}

} // namespace fxc
