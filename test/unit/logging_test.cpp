// Unit tests for the log knobs (driver/logging.h): parsing, help text and emission.
#include "driver/logging.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <unistd.h>

using namespace fxc;

namespace {

LogSettings parse_ok(std::string_view spec) {
  LogSettings s;
  std::string err;
  REQUIRE_MESSAGE(parse_log_settings(spec, &s, &err), err);
  return s;
}

std::string parse_error(std::string_view spec) {
  LogSettings s;
  std::string err;
  CHECK_FALSE(parse_log_settings(spec, &s, &err));
  return err;
}

} // namespace

TEST_CASE("logging: defaults are WARNING for components and no artifacts") {
  LogSettings s = parse_ok("");
  for (Level l : s.levels) CHECK(l == Level::Warning);
  for (bool a : s.artifacts) CHECK_FALSE(a);
  CHECK_FALSE(s.help);
}

TEST_CASE("logging: component prefixes set DEBUG, INFO and ERROR") {
  LogSettings s = parse_ok("+inductor, aot ,-cache");
  CHECK(s.levels[size_t(Component::Inductor)] == Level::Debug);
  CHECK(s.levels[size_t(Component::Aot)] == Level::Info);
  CHECK(s.levels[size_t(Component::Cache)] == Level::Error);
  CHECK(s.levels[size_t(Component::Frontend)] == Level::Warning);
  // +inductor turns on inductor's light artifacts, not the bulky dumps.
  CHECK(s.artifacts[size_t(Artifact::Fusion)]);
  CHECK(s.artifacts[size_t(Artifact::GraphBreaks)]);
  CHECK_FALSE(s.artifacts[size_t(Artifact::OutputCode)]);
  CHECK_FALSE(s.artifacts[size_t(Artifact::Guards)]);
}

TEST_CASE("logging: artifacts turn on by name and off with '-'; later entries win") {
  LogSettings s = parse_ok("graph_breaks,guards,recompiles,aot_graphs,ir_pre_fusion,"
                           "ir_post_fusion,output_code,fusion,schedule,perf_hints");
  for (bool a : s.artifacts) CHECK(a);
  for (Level l : s.levels) CHECK(l == Level::Warning);
  LogSettings t = parse_ok("+inductor,-fusion");
  CHECK_FALSE(t.artifacts[size_t(Artifact::Fusion)]);
  CHECK(t.artifacts[size_t(Artifact::Schedule)]);
  LogSettings u = parse_ok("-fusion,+inductor");
  CHECK(u.artifacts[size_t(Artifact::Fusion)]);
  CHECK(parse_ok("+fusion").artifacts[size_t(Artifact::Fusion)]);
}

TEST_CASE("logging: all, +all and -all") {
  LogSettings a = parse_ok("all");
  for (Level l : a.levels) CHECK(l == Level::Info);
  for (bool x : a.artifacts) CHECK(x);
  LogSettings p = parse_ok("+all,-output_code");
  for (Level l : p.levels) CHECK(l == Level::Debug);
  CHECK_FALSE(p.artifacts[size_t(Artifact::OutputCode)]);
  CHECK(p.artifacts[size_t(Artifact::IrPreFusion)]);
  LogSettings m = parse_ok("all,-all,fusion");
  for (Level l : m.levels) CHECK(l == Level::Error);
  CHECK(m.artifacts[size_t(Artifact::Fusion)]);
  CHECK_FALSE(m.artifacts[size_t(Artifact::Guards)]);
}

TEST_CASE("logging: settings apply on top of each other (FXC_LOGS, then --log)") {
  LogSettings s;
  std::string err;
  REQUIRE(parse_log_settings("+inductor,guards", &s, &err));
  REQUIRE(parse_log_settings("-inductor", &s, &err));
  CHECK(s.levels[size_t(Component::Inductor)] == Level::Error);
  CHECK(s.artifacts[size_t(Artifact::Guards)]);
  // A failed parse leaves the settings as they were.
  CHECK_FALSE(parse_log_settings("driver,bogus", &s, &err));
  CHECK(s.levels[size_t(Component::Driver)] == Level::Warning);
}

TEST_CASE("logging: unknown names are errors listing the valid ones") {
  std::string err = parse_error("inductor,fusoin");
  CHECK(err.find("unknown log setting 'fusoin'") == 0);
  for (std::string_view name :
       {"all", "help", "frontend", "aot", "inductor", "cache", "driver", "graph_breaks", "guards",
        "recompiles", "aot_graphs", "ir_pre_fusion", "ir_post_fusion", "output_code", "fusion",
        "schedule", "perf_hints"})
    CHECK(err.find(std::string(name)) != std::string::npos);
  CHECK(parse_error("+").find("unknown log setting '+'") == 0);
  CHECK(parse_error("++inductor").find("'++inductor'") != std::string::npos);
  CHECK(parse_error("Inductor").find("'Inductor'") != std::string::npos);
  CHECK(parse_error("inductor;fusion").find("'inductor;fusion'") != std::string::npos);
}

TEST_CASE("logging: help is recognised and the help text lists every name with a line") {
  CHECK(parse_ok("help").help);
  CHECK(parse_ok("inductor,help").help);
  std::string h = log_help_text();
  CHECK(h.find("+<component>") != std::string::npos);
  CHECK(h.find("FXC_LOGS_OUT") != std::string::npos);
  for (size_t i = 0; i < kNumComponents; ++i) {
    std::string name(component_name(Component(i)));
    CHECK_MESSAGE(h.find("\n  " + name + " ") != std::string::npos, name);
  }
  for (size_t i = 0; i < kNumArtifacts; ++i) {
    std::string name(artifact_name(Artifact(i)));
    CHECK_MESSAGE(h.find("\n  " + name) != std::string::npos, name);
  }
  CHECK(h == log_help_text());
}

TEST_CASE("logging: emission is prefixed, per line, and filtered") {
  std::ostringstream out;
  Logger log(parse_ok("fusion,+driver,-cache"), &out);
  log.artifact(Artifact::Fusion, "fused buf0, buf1\nkept buf2 apart: reduction");
  log.artifact(Artifact::Schedule, "not shown");
  log.log(Component::Driver, Level::Debug, "stage frontend");
  log.log(Component::Inductor, Level::Info, "not shown");
  log.log(Component::Inductor, Level::Warning, "slow path");
  log.log(Component::Cache, Level::Warning, "not shown");
  log.log(Component::Cache, Level::Error, "cache dir unwritable");
  log.artifact(Artifact::Fusion, "a\n\nb\n");
  CHECK(out.str() == "[fxc:fusion] fused buf0, buf1\n"
                     "[fxc:fusion] kept buf2 apart: reduction\n"
                     "[fxc:driver] debug: stage frontend\n"
                     "[fxc:inductor] warning: slow path\n"
                     "[fxc:cache] error: cache dir unwritable\n"
                     "[fxc:fusion] a\n"
                     "[fxc:fusion]\n"
                     "[fxc:fusion] b\n");
  CHECK(log.enabled(Artifact::Fusion));
  CHECK_FALSE(log.enabled(Artifact::Schedule));
  CHECK(log.enabled(Component::Driver, Level::Debug));
  CHECK_FALSE(log.enabled(Component::Cache, Level::Warning));
}

TEST_CASE("logging: from_environment reads FXC_LOGS, --log and FXC_LOGS_OUT") {
  std::string path = "/tmp/fxc_logging_test_" + std::to_string(::getpid()) + ".log";
  std::remove(path.c_str());
  ::setenv("FXC_LOGS", "guards,+aot", 1);
  ::setenv("FXC_LOGS_OUT", path.c_str(), 1);
  std::string err;
  bool help = false;
  {
    std::optional<Logger> l = Logger::from_environment("-aot", &err, &help);
    REQUIRE_MESSAGE(l, err);
    CHECK_FALSE(help);
    CHECK(l->enabled(Artifact::Guards));
    CHECK(l->settings().levels[size_t(Component::Aot)] == Level::Error);
    l->artifact(Artifact::Guards, "input x: f32[4]");
  }
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  CHECK(text.str() == "[fxc:guards] input x: f32[4]\n");
  std::remove(path.c_str());

  CHECK_FALSE(Logger::from_environment("nope", &err, &help));
  CHECK(err.find("--log: unknown log setting 'nope'") == 0);
  ::setenv("FXC_LOGS", "bad", 1);
  CHECK_FALSE(Logger::from_environment("", &err, &help));
  CHECK(err.find("FXC_LOGS: unknown log setting 'bad'") == 0);
  ::setenv("FXC_LOGS", "", 1);
  ::setenv("FXC_LOGS_OUT", "/nonexistent-dir/x.log", 1);
  CHECK_FALSE(Logger::from_environment("", &err, &help));
  CHECK(err.find("FXC_LOGS_OUT: cannot open") == 0);
  ::unsetenv("FXC_LOGS_OUT");
  ::unsetenv("FXC_LOGS");
  REQUIRE(Logger::from_environment("help", &err, &help));
  CHECK(help);
}

TEST_CASE("logging: configure_process_logger maps help to 0, errors to 2, else installs") {
  ::unsetenv("FXC_LOGS");
  ::unsetenv("FXC_LOGS_OUT");
  std::ostringstream out, err;
  CHECK(configure_process_logger("help", out, err) == 0);
  CHECK(out.str() == log_help_text());
  CHECK(err.str().empty());
  std::ostringstream out2, err2;
  CHECK(configure_process_logger("fusion,typo", out2, err2) == 2);
  CHECK(err2.str().find("fxc: error: --log: unknown log setting 'typo'; valid settings: ") == 0);
  CHECK(out2.str().empty());
  CHECK(configure_process_logger("+cache,schedule", out2, err2) == -1);
  CHECK(process_logger().enabled(Artifact::Schedule));
  CHECK(process_logger().enabled(Component::Cache, Level::Debug));
  CHECK(configure_process_logger("", out2, err2) == -1);
  CHECK_FALSE(process_logger().enabled(Artifact::Schedule));
}

TEST_CASE("logging: the layers' log_message() reaches process_logger() as configured") {
  // Without a sink nothing is enabled, whatever the level.
  install_log_sink({}, nullptr);
  CHECK_FALSE(log_enabled(Component::Aot, Level::Error));
  log_message(Component::Aot, Level::Error, "dropped");

  std::string path = "/tmp/fxc_logging_sink_test_" + std::to_string(::getpid()) + ".log";
  std::remove(path.c_str());
  ::unsetenv("FXC_LOGS");
  ::setenv("FXC_LOGS_OUT", path.c_str(), 1);
  std::ostringstream out, err;
  REQUIRE(configure_process_logger("+aot,inductor", out, err) == -1);
  CHECK(log_enabled(Component::Aot, Level::Debug));
  CHECK(log_enabled(Component::Inductor, Level::Info));
  CHECK_FALSE(log_enabled(Component::Inductor, Level::Debug));
  CHECK_FALSE(log_enabled(Component::Frontend, Level::Info));
  CHECK(log_enabled(Component::Frontend, Level::Warning)); // components not named: WARNING
  log_message(Component::Aot, Level::Debug, "saved relu: f32[4], 16 bytes\nrecomputed pow_1");
  log_message(Component::Inductor, Level::Debug, "not shown");
  log_message(Component::Inductor, Level::Info, "2 kernels");
  log_message(Component::Frontend, Level::Info, "not shown");
  ::unsetenv("FXC_LOGS_OUT");
  REQUIRE(configure_process_logger("", out, err) == -1); // closes the file
  CHECK_FALSE(log_enabled(Component::Aot, Level::Debug));
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  CHECK(text.str() == "[fxc:aot] debug: saved relu: f32[4], 16 bytes\n"
                      "[fxc:aot] debug: recomputed pow_1\n"
                      "[fxc:inductor] info: 2 kernels\n");
  std::remove(path.c_str());
}
