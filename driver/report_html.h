// HTML building blocks of --report (driver/report.h): escaping, anchors, inline SVG charts and
// C++ highlighting, all deterministic (same input, same bytes). Covered by
// test/unit/report_test.cpp.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace fxc {

/// `text` with & < > " ' replaced by entities: safe in element content and in quoted
/// attribute values. Bytes other than those five pass through (UTF-8 stays UTF-8); control
/// characters other than tab, newline and carriage return become U+FFFD.
std::string html_escape(std::string_view text);

/// A fragment identifier made of `name`: letters, digits, '-' and '_' are kept, every other
/// byte becomes '_' followed by its two hex digits, so distinct names give distinct ids;
/// `prefix` (e.g. "node-") goes first, so the id never starts with a digit.
std::string html_id(std::string_view prefix, std::string_view name);

/// A relative file path as a URL path: every byte but letters, digits, '-', '.', '_', '~' and
/// '/' percent-encoded ("a b#c" -> "a%20b%23c"), so that a name holding '#', '?', '%' or a space
/// still names its file. Escape the result with html_escape in an attribute, as any text.
std::string url_path(std::string_view path);

/// A number with `decimals` digits after the point ("%.*f"), the same bytes on every run.
std::string format_fixed(double value, int decimals);

/// One bar of svg_bar_chart: `value` sets its length, `label` is written left of it and
/// `note` (e.g. "12.5 GB/s, 41% of peak") right of the value; `href` ("" for none) makes the
/// label a link.
struct ChartBar {
  std::string label;
  double value = 0;
  std::string note;
  std::string href;
};

/// A horizontal bar chart as an inline <svg> element (role="img", a <title> naming it):
/// one row per bar in the given order, bars scaled to the largest value, each value printed as
/// format_fixed(value, decimals) + " " + unit. Every text is escaped. An empty `bars` gives a
/// <p> saying there is nothing to chart.
std::string svg_bar_chart(const std::string& title, const std::vector<ChartBar>& bars,
                          const std::string& unit, int decimals = 3);

/// C++ source as HTML (escaped) with <span class="kw|ty|cm|st|nu|pp"> around keywords, type
/// names, comments, string and character literals, numbers and preprocessor lines. Line
/// structure is kept; an unterminated comment or string is highlighted to the end.
std::string highlight_cpp(std::string_view code);

/// A whole page: doctype, <meta charset>, `title` (escaped), the report's inline stylesheet,
/// a navigation line linking `index_href` (omitted when empty), and `body` (already HTML).
std::string html_page(const std::string& title, const std::string& index_href,
                      const std::string& body);

} // namespace fxc
