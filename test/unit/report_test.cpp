// Unit tests for --report's HTML helpers (driver/report_html.h) and the log capture it uses.
#include "driver/logging.h"
#include "driver/report_html.h"
#include "runtime/cuda_driver.h"

#include <doctest/doctest.h>

#include <sstream>

using namespace fxc;

namespace {

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + what.size())) ++n;
  return n;
}

} // namespace

TEST_CASE("report: html_escape escapes the five markup characters and control bytes") {
  CHECK(html_escape("a < b && c > \"d\" 'e'") ==
        "a &lt; b &amp;&amp; c &gt; &quot;d&quot; &#39;e&#39;");
  CHECK(html_escape("<script>alert(1)</script>") == "&lt;script&gt;alert(1)&lt;/script&gt;");
  CHECK(html_escape("tab\tnl\n") == "tab\tnl\n");
  CHECK(html_escape(std::string("a\x01z")) == "a\xEF\xBF\xBDz");
  CHECK(html_escape("f32[2, 16] \xC2\xB5s") == "f32[2, 16] \xC2\xB5s"); // UTF-8 passes through
  CHECK(html_escape("&amp;") == "&amp;amp;"); // escaping is not idempotent: escape once
}

TEST_CASE("report: html_id keeps safe characters and encodes the rest injectively") {
  CHECK(html_id("node-", "addmm_3") == "node-addmm_3");
  CHECK(html_id("k-", "a.b") == "k-a_2eb");
  CHECK(html_id("k-", "a_2eb") == "k-a_2eb");
  CHECK(html_id("k-", "a\"><x") == "k-a_22_3e_3cx");
  CHECK(html_id("k-", "a b") != html_id("k-", "a_b"));
}

TEST_CASE("report: url_path percent-encodes all but unreserved characters and '/'") {
  CHECK(url_path("graphs/mlp__0_inference_0.0.html") == "graphs/mlp__0_inference_0.0.html");
  CHECK(url_path("graphs/a b#c%d?.html") == "graphs/a%20b%23c%25d%3F.html");
  CHECK(url_path("<&>\"'") == "%3C%26%3E%22%27");
  CHECK(url_path("\xC2\xB5") == "%C2%B5"); // UTF-8, byte by byte
}

TEST_CASE("report: format_fixed is locale-free and has no negative zero") {
  CHECK(format_fixed(1.23456, 3) == "1.235");
  CHECK(format_fixed(-0.0001, 2) == "0.00");
  CHECK(format_fixed(-1.5, 1) == "-1.5");
  CHECK(format_fixed(1234.5, 0) == "1234"); // round half to even, as printf
}

TEST_CASE("report: svg_bar_chart scales bars to the largest value and escapes labels") {
  std::vector<ChartBar> bars = {{"import", 2.0, "", ""},
                                {"<lower> & \"fuse\"", 8.0, "4.0 GB/s", "graphs/g.html#k"},
                                {"codegen", 0.0, "", ""}};
  std::string svg = svg_bar_chart("compile time", bars, "ms", 2);
  CHECK(svg.rfind("<svg class=\"chart\" role=\"img\"", 0) == 0);
  CHECK(svg.find("<title>compile time</title>") != std::string::npos);
  CHECK(count(svg, "<rect ") == 3);
  CHECK(svg.find("width=\"420.0\"") != std::string::npos); // the largest bar: full width
  CHECK(svg.find("width=\"105.0\"") != std::string::npos); // 2 of 8
  CHECK(svg.find("width=\"0.0\"") != std::string::npos);
  CHECK(svg.find("&lt;lower&gt; &amp; &quot;fuse&quot;") != std::string::npos);
  CHECK(svg.find("<lower>") == std::string::npos);
  CHECK(svg.find("8.00 ms, 4.0 GB/s") != std::string::npos);
  CHECK(svg.find("<a href=\"graphs/g.html#k\">") != std::string::npos);
  CHECK(svg.find("height=\"82\"") != std::string::npos);      // 8 + 3 rows of 22 + 8
  CHECK(svg == svg_bar_chart("compile time", bars, "ms", 2)); // deterministic
  // A long label is cut in the chart; the whole label stays in its tooltip.
  std::string long_label(60, 'x');
  std::string cut = svg_bar_chart("t", {{long_label, 1, "", ""}}, "ms");
  CHECK(cut.find("<title>" + long_label + "</title>") != std::string::npos);
  CHECK(cut.find(std::string(41, 'x') + "...</text>") != std::string::npos);
  // ... never inside a UTF-8 sequence: "µ" (2 bytes) at bytes 40-41 goes whole.
  std::string utf8 = std::string(40, 'y') + "\xC2\xB5" + std::string(20, 'z');
  std::string cut8 = svg_bar_chart("t", {{utf8, 1, "", ""}}, "ms");
  CHECK(cut8.find(std::string(40, 'y') + "...</text>") != std::string::npos);
  CHECK(svg_bar_chart("nothing <here>", {}, "ms") ==
        "<p class=\"empty\">nothing &lt;here&gt;: nothing to chart</p>\n");
}

TEST_CASE("report: highlight_cpp marks keywords, types, comments, strings, numbers, directives") {
  std::string h = highlight_cpp("#include <cstdio>\n"
                                "// a < b\n"
                                "int main() { return printf(\"%d<\\\"x\\n\", 42); } /* done */\n");
  CHECK(h == "<span class=\"pp\">#include &lt;cstdio&gt;</span>\n"
             "<span class=\"cm\">// a &lt; b</span>\n"
             "<span class=\"ty\">int</span> main() { <span class=\"kw\">return</span> "
             "printf(<span class=\"st\">&quot;%d&lt;\\&quot;x\\n&quot;</span>, "
             "<span class=\"nu\">42</span>); } <span class=\"cm\">/* done */</span>\n");
  // Identifiers holding keywords are not split; numbers with exponents stay one token.
  CHECK(highlight_cpp("returned = 1.5e-3f;") == "returned = <span class=\"nu\">1.5e-3f</span>;");
  // An unterminated comment or string runs to the end without losing text.
  CHECK(highlight_cpp("x /* open") == "x <span class=\"cm\">/* open</span>");
  CHECK(highlight_cpp("'a") == "<span class=\"st\">&#39;a</span>");
  // A '#' inside a line is not a directive.
  CHECK(highlight_cpp("a # b") == "a # b");
}

TEST_CASE("report: html_page is a whole document with an escaped title") {
  std::string p = html_page("a <b>", "../index.html", "<p>x</p>\n");
  CHECK(p.rfind("<!DOCTYPE html>\n<html lang=\"en\">", 0) == 0);
  CHECK(p.find("<meta charset=\"utf-8\">") != std::string::npos);
  CHECK(p.find("<title>a &lt;b&gt;</title>") != std::string::npos);
  CHECK(p.find("<a href=\"../index.html\">report index</a>") != std::string::npos);
  CHECK(p.find("<p>x</p>\n</body>\n</html>\n") != std::string::npos);
  CHECK(html_page("t", "", "").find("<nav>") == std::string::npos);
}

TEST_CASE("report: a logger keeps what capture() asks for without printing it") {
  LogSettings printed;
  printed.artifacts[size_t(Artifact::Guards)] = true;
  std::ostringstream out;
  Logger log(printed, &out);
  CHECK_FALSE(log.enabled(Artifact::Fusion));
  LogSettings kept;
  kept.artifacts[size_t(Artifact::Fusion)] = true;
  kept.levels[size_t(Component::Cache)] = Level::Info;
  log.capture(kept);
  CHECK(log.enabled(Artifact::Fusion));
  CHECK(log.enabled(Component::Cache, Level::Info));
  CHECK_FALSE(log.enabled(Component::Aot, Level::Info));
  log.artifact(Artifact::Fusion, "fused buf0, buf1");
  log.artifact(Artifact::Guards, "input_0 ok");
  log.log(Component::Cache, Level::Info, "miss");
  log.log(Component::Cache, Level::Warning, "evicted");
  // Printed: guards (asked for) and the warning (the default level); not fusion, not info.
  CHECK(out.str() == "[fxc:guards] input_0 ok\n[fxc:cache] warning: evicted\n");
  std::vector<Logger::Captured> c = log.captured();
  REQUIRE(c.size() == 3);
  CHECK(c[0].stream == "fusion");
  CHECK(c[0].text == "fused buf0, buf1");
  CHECK(c[1].stream == "cache");
  CHECK(c[1].text == "miss");
  CHECK(c[2].level == Level::Warning);
  CHECK(log.sink_levels()[size_t(Component::Cache)] == Level::Info);
  CHECK(log.sink_levels()[size_t(Component::Aot)] == Level::Warning);
}

TEST_CASE("report: a CUDA device's peak bandwidth from its memory clock and bus width") {
  cuda::DeviceInfo h100;
  CHECK(h100.peak_gbps() == 0);    // the driver did not say
  h100.memory_clock_khz = 2619000; // H100 SXM: HBM3, 5120-bit bus
  h100.memory_bus_bits = 5120;
  CHECK(format_fixed(h100.peak_gbps(), 1) == "3352.3");
}
