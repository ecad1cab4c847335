// The loop-IR parser (see loop_ir_parse.h): a line-oriented reader of print_loop_program's text.
#include "passes/loop_ir_parse.h"

#include "frontend/diag.h"

#include <cctype>
#include <cstdlib>
#include <map>
#include <sstream>

namespace fxc {

namespace {

class Parser {
public:
  Parser(const std::string& text, const std::string& file) : file_(file) {
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) lines_.push_back(l);
  }

  LoopProgram run() {
    p_.source = file_;
    for (line_ = 0; line_ < lines_.size(); ++line_) {
      const std::string& l = lines_[line_];
      if (skip(l)) continue;
      if (l.rfind("outputs:", 0) == 0) {
        parse_outputs(l.substr(8));
        continue;
      }
      if (l[0] == ' ') fail("expected a buffer ('bufN: Kind') or 'outputs:'");
      parse_buffer();
    }
    // An extern call's outputs: its own buffer, then its MultiOutputs in order.
    for (int b = 0; b < int(p_.buffers.size()); ++b) {
      Buffer& buf = p_.buffers[b];
      if (buf.kind == Buffer::Kind::Extern) buf.call.outputs.push_back(b);
      int owner = buf.extern_owner;
      if (buf.kind == Buffer::Kind::ExternOutput && owner >= 0 && owner < b &&
          p_.buffers[owner].kind == Buffer::Kind::Extern)
        p_.buffers[owner].call.outputs.push_back(b);
    }
    return std::move(p_);
  }

private:
  [[noreturn]] void fail(const std::string& m) const {
    throw Error(file_ + ":" + std::to_string(line_ + 1), m);
  }
  static bool skip(const std::string& l) {
    size_t i = l.find_first_not_of(' ');
    return i == std::string::npos || l.compare(i, 2, "//") == 0;
  }
  // The next non-blank line if it starts with `prefix` (after the indent): its rest.
  bool next_is(const std::string& prefix, std::string* rest) {
    size_t n = line_ + 1;
    while (n < lines_.size() && skip(lines_[n])) ++n;
    if (n >= lines_.size()) return false;
    const std::string& l = lines_[n];
    if (l.rfind(prefix, 0) != 0) return false;
    line_ = n;
    *rest = l.substr(prefix.size());
    return true;
  }
  std::string expect(const std::string& prefix) {
    std::string rest;
    if (!next_is(prefix, &rest)) {
      ++line_;
      fail("expected '" + prefix.substr(prefix.find_first_not_of(' ')) + "'");
    }
    return rest;
  }

  // ---- a cursor over one piece of text
  struct Cursor {
    const std::string& s;
    size_t i = 0;
    bool eat(const std::string& t) {
      if (s.compare(i, t.size(), t) != 0) return false;
      i += t.size();
      return true;
    }
    bool at_end() const { return i >= s.size(); }
    char peek() const { return i < s.size() ? s[i] : '\0'; }
  };
  void need(Cursor& c, const std::string& t) {
    if (!c.eat(t))
      fail("expected '" + t + "' at column " + std::to_string(c.i + 1) + " of '" + c.s + "'");
  }
  int64_t integer(Cursor& c) {
    size_t j = c.i;
    if (c.peek() == '-') ++j;
    size_t k = j;
    while (k < c.s.size() && std::isdigit(static_cast<unsigned char>(c.s[k]))) ++k;
    if (k == j)
      fail("expected an integer at column " + std::to_string(c.i + 1) + " of '" + c.s + "'");
    int64_t v = std::strtoll(c.s.c_str() + c.i, nullptr, 10);
    c.i = k;
    return v;
  }
  std::string word(Cursor& c, const std::string& stops) {
    size_t j = c.i;
    while (j < c.s.size() && stops.find(c.s[j]) == std::string::npos) ++j;
    std::string w = c.s.substr(c.i, j - c.i);
    c.i = j;
    return w;
  }
  std::vector<int64_t> int_list(Cursor& c, const std::string& open, const std::string& close) {
    need(c, open);
    std::vector<int64_t> v;
    while (!c.eat(close)) {
      if (!v.empty()) need(c, ", ");
      v.push_back(integer(c));
    }
    return v;
  }
  DType dtype(const std::string& name) {
    auto t = parse_dtype(name);
    if (!t) fail("unknown dtype '" + name + "'");
    return *t;
  }
  int buffer_id(const std::string& name) {
    auto it = ids_.find(name);
    if (it == ids_.end()) fail("unknown buffer '" + name + "'");
    return it->second;
  }

  // ---- index expressions: what IndexExpr::str prints
  IndexExpr index_atom(Cursor& c) {
    if (c.eat("((")) {
      IndexExpr arg = index_expr(c);
      need(c, ") ");
      bool div = c.eat("// ");
      if (!div) need(c, "% ");
      int64_t d = integer(c);
      need(c, ")");
      if (d <= 0) fail("division by " + std::to_string(d) + " in an index");
      return div ? arg.floordiv(d) : arg.mod(d);
    }
    if (c.eat("indirect("))
      fail("indirect indices (gather, embedding) have no parseable text form");
    char v = c.peek();
    if (v != 'x' && v != 'r')
      fail("expected an index variable at column " + std::to_string(c.i + 1) + " of '" + c.s + "'");
    ++c.i;
    int id = v == 'x' ? kXVar : kRVar;
    if (std::isdigit(static_cast<unsigned char>(c.peek())))
      id = int(integer(c)) + (v == 'r' ? kRVarBase : 0);
    auto it = extents_.find(id);
    if (it == extents_.end())
      fail("index variable " + var_name(id) + " is not a loop variable of this buffer");
    return IndexExpr::var(id, it->second);
  }
  IndexExpr index_term(Cursor& c) {
    if (std::isdigit(static_cast<unsigned char>(c.peek()))) {
      int64_t k = integer(c);
      if (!c.eat("*")) return IndexExpr(k);
      return index_atom(c) * k;
    }
    return index_atom(c);
  }
  IndexExpr index_expr(Cursor& c) {
    bool neg = c.eat("-");
    IndexExpr e = index_term(c);
    if (neg) e = IndexExpr(0) - e;
    for (;;) {
      if (c.eat(" + "))
        e = e + index_term(c);
      else if (c.eat(" - "))
        e = e - index_term(c);
      else
        return e;
    }
  }

  // ---- one buffer
  void parse_buffer() {
    Cursor c{lines_[line_]};
    Buffer b;
    b.name = word(c, ":");
    need(c, ": ");
    std::string kind = c.s.substr(c.i);
    const std::map<std::string, Buffer::Kind> kinds = {
        {"InputBuffer", Buffer::Kind::Input},
        {"ComputedBuffer(pointwise)", Buffer::Kind::Pointwise},
        {"ComputedBuffer(reduction)", Buffer::Kind::Reduction},
        {"ExternKernel", Buffer::Kind::Extern},
        {"MultiOutput", Buffer::Kind::ExternOutput}};
    auto k = kinds.find(kind);
    if (k == kinds.end()) fail("unknown buffer kind '" + kind + "'");
    b.kind = k->second;
    if (ids_.count(b.name)) fail("a second buffer named " + b.name);
    int id = int(p_.buffers.size());
    ids_[b.name] = id;
    {
      std::string rest = expect("  layout: ");
      Cursor l{rest};
      b.dtype = dtype(word(l, "["));
      b.sizes = int_list(l, "[", "]");
    }
    std::string rest;
    if (next_is("  origins: ", &rest)) {
      Cursor o{rest};
      while (!o.at_end()) {
        if (!b.origins.empty()) need(o, ", ");
        std::string n = word(o, ",");
        b.origins.push_back(n);
        std::string op = n;
        size_t u = op.find_last_of('_');
        if (u != std::string::npos && u + 1 < op.size() &&
            op.find_first_not_of("0123456789", u + 1) == std::string::npos)
          op = op.substr(0, u);
        if (std::find(b.origin_ops.begin(), b.origin_ops.end(), op) == b.origin_ops.end())
          b.origin_ops.push_back(op);
      }
    }
    if (b.kind == Buffer::Kind::Input) {
      if (next_is("  user input ", &rest)) {
        Cursor u{rest};
        b.input_index = int(integer(u));
      } else {
        b.weight = expect("  weight ");
      }
      p_.buffers.push_back(std::move(b));
      return;
    }
    next_is("  reads: ", &rest); // derived from the body: printed, not read
    if (b.kind == Buffer::Kind::Extern)
      parse_extern(b, expect("  extern: "));
    else if (b.kind == Buffer::Kind::ExternOutput)
      b.extern_owner = buffer_id(expect("  output of "));
    else
      parse_loop(b);
    p_.buffers.push_back(std::move(b));
  }

  void parse_extern(Buffer& b, const std::string& text) {
    Cursor c{text};
    ExternCall& call = b.call;
    call.op = word(c, " ");
    need(c, " (");
    if (c.eat("blas")) {
      call.kind = ExternCall::Kind::Gemm;
      if (c.eat(", epilogue ")) {
        std::string e = word(c, ")");
        bool found = false;
        for (GemmEpilogue g : {GemmEpilogue::Bias, GemmEpilogue::ReluBias,
                               GemmEpilogue::GeluTanhBias, GemmEpilogue::BiasResidual})
          if (e == gemm_epilogue_name(g)) call.epilogue = g, found = true;
        if (!found) fail("unknown gemm epilogue '" + e + "'");
      }
    } else if (c.eat("cudnn attention")) {
      call.kind = ExternCall::Kind::Attention;
      need(c, ", scale ");
      std::string v = word(c, ",)");
      try {
        size_t used = 0;
        call.attn_scale = std::stod(v, &used);
        if (used != v.size()) throw std::invalid_argument(v);
      } catch (const std::exception&) {
        fail("attention scale '" + v + "' is not a number");
      }
      if (c.eat(", causal")) call.causal = true;
    } else if (c.eat("cudnn") || c.eat("onednn")) {
      call.kind = ExternCall::Kind::Conv;
      auto pair = [&](const std::string& what, std::vector<int64_t>& v) {
        need(c, ", " + what + " ");
        v = int_list(c, "[", "]");
        if (v.empty() || v.size() > 3) fail(what + " takes one to three values");
      };
      pair("stride", call.stride);
      pair("padding", call.padding);
      pair("dilation", call.dilation);
      need(c, ", groups ");
      call.groups = integer(c);
      if (c.eat(", channels_last")) call.channels_last = true;
      if (c.eat(", post-ops ")) call.post_ops = word(c, ")"); // a folded scale is not printed
      if (call.op == "convolution_backward_data" || call.op == "onednn_convolution_backward_data")
        call.kind = ExternCall::Kind::ConvBackwardData;
      if (call.op == "convolution_backward_filter" ||
          call.op == "onednn_convolution_backward_filter")
        call.kind = ExternCall::Kind::ConvBackwardFilter;
    } else {
      need(c, "fallback");
      call.kind = ExternCall::Kind::Fallback;
      call.reason = "read from loop IR text (no graph: cannot run)";
    }
    need(c, ")(");
    while (!c.eat(")")) {
      if (!call.operands.empty()) need(c, ", ");
      ExternOperand o;
      o.buffer = buffer_id(word(c, "["));
      o.sizes = int_list(c, "[", "]");
      o.strides = int_list(c, "{", "}");
      need(c, "+");
      o.offset = integer(c);
      call.operands.push_back(std::move(o));
    }
    if (!c.at_end()) fail("unexpected text after the extern call's operands");
  }

  void parse_loop(Buffer& b) {
    std::string text = expect("  loop: ");
    Cursor c{text};
    extents_.clear();
    for (size_t i = 0; i < b.sizes.size(); ++i) {
      if (i) need(c, ", ");
      IndexExpr v = IndexExpr::var(int(i), b.sizes[i]);
      need(c, v.str() + " < " + std::to_string(b.sizes[i]));
      b.vars.push_back(v);
      extents_[int(i)] = b.sizes[i];
    }
    if (b.kind == Buffer::Kind::Reduction) {
      need(c, b.sizes.empty() ? "| reduce " : " | reduce ");
      std::string op = word(c, " ");
      bool found = false;
      for (ReduceOp r : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::Any,
                         ReduceOp::ArgMax, ReduceOp::ArgMin, ReduceOp::Prod})
        if (op == reduce_op_name(r)) b.reduce = r, found = true;
      if (!found) fail("unknown reduction '" + op + "'");
      need(c, " over ");
      while (!c.at_end()) {
        if (!b.rsizes.empty()) need(c, ", ");
        size_t j = b.rsizes.size();
        // "r0 < 16", or "0 < 1" for an extent-1 reduced dim
        std::string name = word(c, " ");
        need(c, " < ");
        int64_t n = integer(c);
        IndexExpr v = IndexExpr::var(kRVarBase + int(j), n);
        if (name != v.str())
          fail("reduction variable " + std::to_string(j) + " is printed " + v.str() + ", not " +
               name);
        b.rvars.push_back(v);
        b.rsizes.push_back(n);
        extents_[kRVarBase + int(j)] = n;
      }
    }
    if (!c.at_end()) fail("unexpected text after the loop variables");
    std::map<std::string, VPtr> tmps;
    VPtr last;
    std::string store = b.kind == Buffer::Kind::Reduction ? "reduce_store(" : "store(";
    for (;;) {
      std::string rest;
      if (next_is("    " + store, &rest)) {
        Cursor s{rest};
        need(s, b.name + ", ");
        IndexExpr at = index_expr(s);
        need(s, ", ");
        std::string t = word(s, ")");
        need(s, ")");
        if (!tmps.count(t)) fail("store of unknown value '" + t + "'");
        std::vector<int64_t> strides = contiguous_strides(b.sizes);
        if (at != linear_index(b.vars, strides))
          fail("a buffer stores at its row-major index " + linear_index(b.vars, strides).str() +
               ", not " + at.str());
        b.body = tmps.at(t);
        return;
      }
      if (!next_is("    tmp", &rest)) {
        ++line_;
        fail("expected 'tmpN = ...' or '" + store + "...)' in the body of " + b.name);
      }
      Cursor t{rest};
      std::string name = "tmp" + word(t, " ");
      need(t, " = ");
      tmps[name] = value(t, tmps);
      if (!t.at_end()) fail("unexpected text after the value");
    }
  }

  VPtr value(Cursor& c, const std::map<std::string, VPtr>& tmps) {
    auto e = std::make_shared<VExpr>();
    std::string fn = word(c, "(");
    need(c, "(");
    auto tmp = [&] {
      std::string n = word(c, ",)");
      auto it = tmps.find(n);
      if (it == tmps.end()) fail("unknown value '" + n + "'");
      return it->second;
    };
    if (fn == "constant") {
      e->op = VOp::Const;
      std::string v = word(c, ",");
      need(c, ", ");
      e->dtype = dtype(word(c, ")"));
      if (is_floating(e->dtype))
        e->fval = std::strtod(v.c_str(), nullptr);
      else if (e->dtype == DType::Bool)
        e->ival = v == "True";
      else
        e->ival = std::strtoll(v.c_str(), nullptr, 10);
    } else if (fn == "load") {
      e->op = VOp::Load;
      e->buffer = buffer_id(word(c, ","));
      e->dtype = p_.buffers[e->buffer].dtype;
      need(c, ", ");
      e->index = index_expr(c);
    } else if (fn == "index_expr") {
      e->op = VOp::Index;
      e->index = index_expr(c);
      need(c, ", ");
      e->dtype = dtype(word(c, ")"));
    } else if (fn == "to_dtype") {
      e->op = VOp::Cast;
      e->args.push_back(tmp());
      need(c, ", ");
      e->dtype = dtype(word(c, ")"));
    } else {
      bool found = false;
      for (int o = int(VOp::Neg); o <= int(VOp::Where); ++o)
        if (vop_name(VOp(o)) == fn) e->op = VOp(o), found = true;
      ScalarFn f;
      if (!found && fn.rfind("call_", 0) == 0) {
        if (!scalar_fn_by_name(fn.substr(5), &f)) fail("unknown scalar function '" + fn + "'");
        e->op = VOp::Call, e->ival = int64_t(f), found = true;
      }
      if (!found) fail("unknown operation '" + fn + "'");
      while (c.peek() != ')' && !c.at_end()) {
        if (!e->args.empty()) need(c, ", ");
        e->args.push_back(tmp());
      }
      if (e->args.empty()) fail(fn + " without operands");
      // The result type as v_unary/v_binary/v_where give it (mismatches are the verifier's).
      if (vop_is_compare(e->op) || e->op == VOp::And || e->op == VOp::Or || e->op == VOp::Not)
        e->dtype = DType::Bool;
      else
        e->dtype = e->args[e->op == VOp::Where && e->args.size() > 1 ? 1 : 0]->dtype;
    }
    need(c, ")");
    return e;
  }

  void parse_outputs(const std::string& text) {
    Cursor c{text};
    while (c.eat(" ")) {
      OutputView o;
      o.buffer = buffer_id(word(c, ":"));
      need(c, ":");
      o.meta.dtype = dtype(word(c, "["));
      o.meta.sizes = int_list(c, "[", "]");
      o.meta.strides = c.peek() == '{' ? int_list(c, "{", "}") : contiguous_strides(o.meta.sizes);
      if (c.eat("+")) o.meta.storage_offset = integer(c);
      p_.outputs.push_back(std::move(o));
    }
    if (!c.at_end()) fail("unexpected text in the outputs line");
  }

  std::string file_;
  std::vector<std::string> lines_;
  size_t line_ = 0;
  LoopProgram p_;
  std::map<std::string, int> ids_;
  std::map<int, int64_t> extents_;
};

} // namespace

LoopProgram parse_loop_program(const std::string& text, const std::string& file) {
  return Parser(text, file).run();
}

} // namespace fxc
