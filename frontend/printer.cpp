// The readable FX graph printer, in the style of PyTorch's GraphModule.print_readable().
#include "frontend/printer.h"

#include "frontend/schema.h"

#include <cassert>
#include <charconv>
#include <cmath>

namespace fxc {

namespace {

std::string_view torch_dtype_name(DType t) {
  switch (t) {
  case DType::Bool:
    return "torch.bool";
  case DType::U8:
    return "torch.uint8";
  case DType::I8:
    return "torch.int8";
  case DType::I16:
    return "torch.int16";
  case DType::I32:
    return "torch.int32";
  case DType::I64:
    return "torch.int64";
  case DType::F16:
    return "torch.float16";
  case DType::BF16:
    return "torch.bfloat16";
  case DType::F32:
    return "torch.float32";
  case DType::F64:
    return "torch.float64";
  }
  assert(false && "unknown dtype");
  return "?";
}

std::string_view memory_format_name(int64_t code) {
  switch (MemoryFormat(code)) {
  case MemoryFormat::Contiguous:
    return "torch.contiguous_format";
  case MemoryFormat::ChannelsLast:
    return "torch.channels_last";
  case MemoryFormat::ChannelsLast3d:
    return "torch.channels_last_3d";
  case MemoryFormat::Preserve:
    return "torch.preserve_format";
  }
  assert(false && "unknown memory format");
  return "?";
}

// Python's repr(float): shortest round-trip digits, exponent form below 1e-4 and from 1e16.
std::string python_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == 0) return std::signbit(v) ? "-0.0" : "0.0";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  assert(res.ec == std::errc() && "to_chars into 64 bytes cannot fail");
  std::string sci(buf, res.ptr);
  std::string sign;
  if (sci[0] == '-') {
    sign = "-";
    sci = sci.substr(1);
  }
  size_t epos = sci.find('e');
  std::string digits = sci.substr(0, 1) + (epos > 2 ? sci.substr(2, epos - 2) : "");
  int exp = std::stoi(sci.substr(epos + 1));
  if (exp < -4 || exp >= 16) {
    std::string m = digits.substr(0, 1);
    if (digits.size() > 1) m += "." + digits.substr(1);
    std::string e = std::to_string(std::abs(exp));
    if (e.size() < 2) e = "0" + e;
    return sign + m + "e" + (exp < 0 ? "-" : "+") + e;
  }
  if (exp < 0) return sign + "0." + std::string(size_t(-exp - 1), '0') + digits;
  std::string ip = digits.substr(0, std::min(digits.size(), size_t(exp) + 1));
  if (ip.size() < size_t(exp) + 1) ip += std::string(size_t(exp) + 1 - ip.size(), '0');
  std::string fp = digits.size() > size_t(exp) + 1 ? digits.substr(size_t(exp) + 1) : "0";
  return sign + ip + "." + fp;
}

std::string python_string(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\\' || c == '\'') out += '\\';
    if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out + "'";
}

template <typename T, typename F> std::string list(const std::vector<T>& v, F fmt) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ", ";
    s += fmt(v[i]);
  }
  return s + "]";
}

// "File: fixtures_probe.py:14 in forward, code: x = ..." from the innermost frame outside
// site-packages (the user's code), or the innermost frame when every frame is library code.
std::string stack_summary(const std::string& trace) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start <= trace.size()) {
    size_t end = trace.find('\n', start);
    if (end == std::string::npos) end = trace.size();
    lines.push_back(trace.substr(start, end - start));
    start = end + 1;
  }
  auto strip = [](const std::string& s) {
    size_t b = s.find_first_not_of(" \t\r");
    size_t e = s.find_last_not_of(" \t\r");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
  };
  std::string best, fallback;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string l = strip(lines[i]);
    // File "<file>", line <n>, in <fn>
    if (l.rfind("File \"", 0) != 0) continue;
    size_t q = l.find("\", line ", 6);
    if (q == std::string::npos) continue;
    size_t in = l.find(", in ", q + 8);
    if (in == std::string::npos) continue;
    std::string file = l.substr(6, q - 6);
    std::string line = l.substr(q + 8, in - q - 8);
    std::string fn = l.substr(in + 5);
    std::string code = i + 1 < lines.size() ? strip(lines[i + 1]) : "";
    std::string summary = "File: " + file + ":" + line + " in " + fn + ", code: " + code;
    fallback = summary;
    if (file.find("site-packages") == std::string::npos) best = summary;
  }
  return best.empty() ? fallback : best;
}

} // namespace

std::string format_arg(const Graph& g, const Arg& a) {
  using K = Arg::Kind;
  auto name = [&](ValueId v) { return v == kNoValue ? std::string("None") : g.values[v].name; };
  switch (a.kind) {
  case K::None:
    return "None";
  case K::Int:
    return !a.syms.empty() && !a.syms[0].empty() ? format_sym(a.syms[0]) : std::to_string(a.i);
  case K::Float:
    return python_float(a.f);
  case K::Bool:
    return a.b ? "True" : "False";
  case K::String:
    return python_string(a.s);
  case K::Ints: {
    if (a.syms.size() != a.ints.size())
      return list(a.ints, [](int64_t x) { return std::to_string(x); });
    std::vector<std::string> dims;
    for (size_t k = 0; k < a.ints.size(); ++k)
      dims.push_back(a.syms[k].empty() ? std::to_string(a.ints[k]) : format_sym(a.syms[k]));
    return list(dims, [](const std::string& x) { return x; });
  }
  case K::Floats:
    return list(a.floats, python_float);
  case K::Bools:
    return list(a.bools, [](bool b) { return std::string(b ? "True" : "False"); });
  case K::Tensor:
    return name(a.tensor);
  case K::Tensors:
    return list(a.tensors, name);
  case K::DType:
    return std::string(torch_dtype_name(a.dtype()));
  case K::Device:
    return "device(type='" + std::string(a.device.kind == Device::CUDA ? "cuda" : "cpu") + "'" +
           (a.device.index >= 0 ? ", index=" + std::to_string(a.device.index) : "") + ")";
  case K::MemoryFormat:
    return std::string(memory_format_name(a.i));
  case K::Layout:
    return "torch.strided";
  }
  assert(false && "unknown arg kind");
  return "?";
}

std::string print_readable(const Graph& g) {
  auto annotated = [&](ValueId v) {
    return g.values[v].name + ": \"" + format_meta(g.values[v].meta) + "\"";
  };
  std::string out = "def forward(self";
  for (const GraphInput& in : g.inputs) out += ", " + annotated(in.value);
  out += "):\n";
  std::string prev_summary;
  bool first = true;
  for (const Node& n : g.nodes) {
    assert(n.schema && n.args.size() == n.schema->args.size() && "node not bound to its schema");
    std::string summary = n.stack_trace.empty() ? "" : stack_summary(n.stack_trace);
    if (n.stack_trace.empty() && !prev_summary.empty())
      summary = "No stacktrace found for following nodes";
    if (!summary.empty() && summary != prev_summary) {
      if (!first) out += "\n";
      out += "    # " + summary + "\n";
    }
    prev_summary = n.stack_trace.empty() ? "" : summary;
    first = false;

    // Positional while every earlier positional argument was given; keywords after that.
    std::string call = n.target + "(";
    bool gap = false, any = false;
    for (size_t i = 0; i < n.args.size(); ++i) {
      if (!n.given[i]) {
        gap = true;
        continue;
      }
      const ArgSchema& s = n.schema->args[i];
      if (any) call += ", ";
      any = true;
      if (s.kwarg_only || gap) call += s.name + " = ";
      call += format_arg(g, n.args[i]);
    }
    call += ")";
    const bool single =
        n.schema->returns.size() == 1 && !n.schema->returns[0].is_list && n.outputs.size() == 1;
    if (single) {
      out += "    " + annotated(n.outputs[0]) + " = " + call + "\n";
      continue;
    }
    out += "    " + n.name + " = " + call + "\n";
    for (size_t i = 0; i < n.outputs.size(); ++i)
      out += "    " + annotated(n.outputs[i]) + " = " + n.name + "[" + std::to_string(i) + "]\n";
  }
  out += "    return (";
  for (size_t i = 0; i < g.outputs.size(); ++i)
    out += (i ? ", " : "") + g.values[g.outputs[i]].name;
  out += g.outputs.size() == 1 ? ",)\n" : ")\n";
  return out;
}

} // namespace fxc
