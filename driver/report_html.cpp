// HTML building blocks of --report: escaping, anchors, inline SVG charts, C++ highlighting.
#include "driver/report_html.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <set>

namespace fxc {

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (char c : text) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    case '\'':
      out += "&#39;";
      break;
    default:
      if ((unsigned char)c < 0x20 && c != '\n' && c != '\t' && c != '\r')
        out += "\xEF\xBF\xBD";
      else if (c == 0x7f)
        out += "\xEF\xBF\xBD";
      else
        out += c;
    }
  }
  return out;
}

std::string html_id(std::string_view prefix, std::string_view name) {
  std::string out(prefix);
  for (unsigned char c : name) {
    if (std::isalnum(c) || c == '-' || c == '_') {
      out += char(c);
      continue;
    }
    char buf[4];
    std::snprintf(buf, sizeof buf, "_%02x", c);
    out += buf;
  }
  return out;
}

std::string url_path(std::string_view path) {
  std::string out;
  for (unsigned char c : path) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
      out += char(c);
      continue;
    }
    char buf[4];
    std::snprintf(buf, sizeof buf, "%%%02X", c);
    out += buf;
  }
  return out;
}

std::string format_fixed(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  std::string s = buf;
  if (s == "-0" || s.rfind("-0.", 0) == 0) // -0.000 prints as 0.000
    if (s.find_first_of("123456789") == std::string::npos) s = s.substr(1);
  return s;
}

std::string svg_bar_chart(const std::string& title, const std::vector<ChartBar>& bars,
                          const std::string& unit, int decimals) {
  if (bars.empty()) return "<p class=\"empty\">" + html_escape(title) + ": nothing to chart</p>\n";
  constexpr int kLabelW = 340, kBarW = 420, kRowH = 22, kTop = 8, kWidth = 1180;
  double max = 0;
  for (const ChartBar& b : bars) max = std::max(max, b.value);
  const int height = kTop * 2 + kRowH * int(bars.size());
  std::string s =
      "<svg class=\"chart\" role=\"img\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
      std::to_string(kWidth) + "\" height=\"" + std::to_string(height) + "\" viewBox=\"0 0 " +
      std::to_string(kWidth) + " " + std::to_string(height) + "\">\n<title>" + html_escape(title) +
      "</title>\n";
  for (size_t i = 0; i < bars.size(); ++i) {
    const ChartBar& b = bars[i];
    const int y = kTop + kRowH * int(i);
    const double w = max > 0 && b.value > 0 ? kBarW * b.value / max : 0;
    std::string label = b.label;
    if (label.size() > 44) { // cut at 41 bytes, not inside a UTF-8 sequence
      size_t cut = 41;
      while (cut > 0 && (static_cast<unsigned char>(label[cut]) & 0xC0) == 0x80) --cut;
      label = label.substr(0, cut) + "...";
    }
    std::string text = "<text x=\"" + std::to_string(kLabelW - 6) + "\" y=\"" +
                       std::to_string(y + 15) + "\" text-anchor=\"end\"><title>" +
                       html_escape(b.label) + "</title>" + html_escape(label) + "</text>";
    if (!b.href.empty()) text = "<a href=\"" + html_escape(b.href) + "\">" + text + "</a>";
    s += "<g class=\"bar\">" + text + "<rect x=\"" + std::to_string(kLabelW) + "\" y=\"" +
         std::to_string(y + 3) + "\" width=\"" + format_fixed(w, 1) + "\" height=\"" +
         std::to_string(kRowH - 6) + "\"/><text x=\"" + format_fixed(kLabelW + w + 6, 1) +
         "\" y=\"" + std::to_string(y + 15) + "\">" + html_escape(format_fixed(b.value, decimals)) +
         " " + html_escape(unit) + (b.note.empty() ? "" : ", " + html_escape(b.note)) +
         "</text></g>\n";
  }
  return s + "</svg>\n";
}

namespace {

const std::set<std::string_view>& cpp_keywords() {
  static const std::set<std::string_view> k = {"alignas",
                                               "alignof",
                                               "auto",
                                               "break",
                                               "case",
                                               "catch",
                                               "class",
                                               "const",
                                               "constexpr",
                                               "continue",
                                               "default",
                                               "delete",
                                               "do",
                                               "else",
                                               "enum",
                                               "explicit",
                                               "extern",
                                               "false",
                                               "for",
                                               "friend",
                                               "goto",
                                               "if",
                                               "inline",
                                               "namespace",
                                               "new",
                                               "noexcept",
                                               "nullptr",
                                               "operator",
                                               "private",
                                               "protected",
                                               "public",
                                               "return",
                                               "sizeof",
                                               "static",
                                               "static_assert",
                                               "static_cast",
                                               "reinterpret_cast",
                                               "const_cast",
                                               "struct",
                                               "switch",
                                               "template",
                                               "this",
                                               "throw",
                                               "true",
                                               "try",
                                               "typedef",
                                               "typename",
                                               "union",
                                               "using",
                                               "virtual",
                                               "volatile",
                                               "while",
                                               "restrict",
                                               "__restrict__"};
  return k;
}

const std::set<std::string_view>& cpp_types() {
  static const std::set<std::string_view> t = {
      "void",    "bool",    "char",     "short",    "int",      "long",    "float",
      "double",  "signed",  "unsigned", "size_t",   "int8_t",   "int16_t", "int32_t",
      "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t", "std"};
  return t;
}

bool ident_start(char c) {
  return std::isalpha((unsigned char)c) || c == '_';
}
bool ident_char(char c) {
  return std::isalnum((unsigned char)c) || c == '_';
}

std::string span(const char* cls, std::string_view text) {
  return std::string("<span class=\"") + cls + "\">" + html_escape(text) + "</span>";
}

} // namespace

std::string highlight_cpp(std::string_view code) {
  std::string out;
  size_t i = 0, n = code.size();
  bool line_start = true; // only whitespace so far on this line
  while (i < n) {
    char c = code[i];
    if (c == '\n') {
      out += '\n';
      line_start = true;
      ++i;
      continue;
    }
    if (line_start && c == '#') { // a preprocessor line, up to an unescaped newline
      size_t j = i;
      while (j < n && code[j] != '\n') j += code[j] == '\\' && j + 1 < n ? 2 : 1;
      out += span("pp", code.substr(i, j - i));
      i = j;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') {
      out += c;
      ++i;
      continue;
    }
    line_start = false;
    if (c == '/' && i + 1 < n && code[i + 1] == '/') {
      size_t j = code.find('\n', i);
      if (j == std::string_view::npos) j = n;
      out += span("cm", code.substr(i, j - i));
      i = j;
      continue;
    }
    if (c == '/' && i + 1 < n && code[i + 1] == '*') {
      size_t j = code.find("*/", i + 2);
      j = j == std::string_view::npos ? n : j + 2;
      out += span("cm", code.substr(i, j - i));
      i = j;
      continue;
    }
    if (c == '"' || c == '\'') {
      size_t j = i + 1;
      while (j < n && code[j] != c && code[j] != '\n') j += code[j] == '\\' && j + 1 < n ? 2 : 1;
      if (j < n && code[j] == c) ++j;
      out += span("st", code.substr(i, j - i));
      i = j;
      continue;
    }
    if (std::isdigit((unsigned char)c) ||
        (c == '.' && i + 1 < n && std::isdigit((unsigned char)code[i + 1]))) {
      size_t j = i + 1;
      while (j < n &&
             (ident_char(code[j]) || code[j] == '.' ||
              ((code[j] == '+' || code[j] == '-') && (code[j - 1] == 'e' || code[j - 1] == 'E'))))
        ++j;
      out += span("nu", code.substr(i, j - i));
      i = j;
      continue;
    }
    if (ident_start(c)) {
      size_t j = i + 1;
      while (j < n && ident_char(code[j])) ++j;
      std::string_view word = code.substr(i, j - i);
      if (cpp_keywords().count(word))
        out += span("kw", word);
      else if (cpp_types().count(word))
        out += span("ty", word);
      else
        out += html_escape(word);
      i = j;
      continue;
    }
    out += html_escape(code.substr(i, 1));
    ++i;
  }
  return out;
}

std::string html_page(const std::string& title, const std::string& index_href,
                      const std::string& body) {
  static const char* kStyle =
      "body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1200px;padding:0 16px 40px;"
      "color:#1d1d1f;background:#fff}\n"
      "h1{font-size:22px;margin:18px 0 6px}h2{font-size:18px;margin:26px 0 8px;border-bottom:1px "
      "solid #ddd}"
      "h3{font-size:15px;margin:18px 0 6px}\n"
      "nav{padding:8px 0;border-bottom:1px solid #ddd}nav a{margin-right:14px}\n"
      "table{border-collapse:collapse;margin:6px 0}td,th{border:1px solid #ddd;padding:3px 8px;"
      "text-align:left;vertical-align:top}th{background:#f4f4f6}\n"
      "td.num{text-align:right;font-variant-numeric:tabular-nums}\n"
      "pre{background:#f7f7f9;border:1px solid #e2e2e6;padding:8px;overflow:auto;font:12px/1.4 "
      "ui-monospace,monospace;max-height:640px}\n"
      "pre.long{max-height:none}pre.graph{white-space:pre-wrap;word-break:break-all}\n"
      "details{margin:4px 0}summary{cursor:pointer}\n"
      ".kw{color:#a626a4;font-weight:600}.ty{color:#0b6bcb}.cm{color:#6a737d;font-style:italic}"
      ".st{color:#50a14f}.nu{color:#986801}.pp{color:#c18401}\n"
      ".ok{color:#116329}.bad{color:#b31d28;font-weight:600}.note{color:#555}\n"
      ".add{background:#e6ffec}.del{background:#ffebe9}\n"
      "svg.chart{font:12px system-ui,sans-serif;display:block;margin:6px 0}"
      "svg.chart rect{fill:#4f7fd9}svg.chart a text{fill:#0b5cad;text-decoration:underline}\n"
      ":target{background:#fff3b0}\n"
      "code{font:12px ui-monospace,monospace}\n";
  std::string nav = index_href.empty() ? std::string()
                                       : "<nav><a href=\"" + html_escape(index_href) +
                                             "\">report index</a></nav>\n";
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" +
         html_escape(title) + "</title>\n<style>\n" + kStyle + "</style>\n</head>\n<body>\n" + nav +
         body + "</body>\n</html>\n";
}

} // namespace fxc
