// The command line's parsing: repeatable options, enumerated values, "did you mean", warnings.
#include "driver/driver.h"
#include "driver/options.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace {

// parse_options over a list of words (argv[0] first); the exit status or -1 to go on.
int parse(std::vector<std::string> words, fxc::Options* o) {
  words.insert(words.begin(), "fxc");
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  auto status = fxc::parse_options(int(argv.size()), argv.data(), o);
  return status ? *status : -1;
}

} // namespace

TEST_CASE("did_you_mean: the closest candidate, transpositions count one") {
  std::vector<std::string> backends{"eager", "aot_eager", "aot_eager_decomp_partition", "inductor"};
  CHECK(fxc::did_you_mean("indcutor", backends) == "inductor");
  CHECK(fxc::did_you_mean("eagr", backends) == "eager");
  CHECK(fxc::did_you_mean("cdua", {"cpu", "cuda"}) == "cuda");
  CHECK(fxc::did_you_mean("zzzzzzzz", backends).empty());
  CHECK(fxc::did_you_mean("--bakcend", {"--backend", "--bench", "--bisect"}) == "--backend");
}

TEST_CASE("--plugin takes one library per occurrence, never the graph") {
  fxc::Options o;
  CHECK(parse({"--plugin", "a.so", "g.fxg"}, &o) == -1);
  CHECK(o.input == "g.fxg");
  REQUIRE(o.plugins.size() == 1);
  CHECK(o.plugins[0] == "a.so");
  fxc::Options two;
  CHECK(parse({"--plugin=a.so", "--plugin=b.so", "--run", "g.fxg"}, &two) == -1);
  CHECK(two.input == "g.fxg");
  CHECK(two.plugins == std::vector<std::string>{"a.so", "b.so"});
}

TEST_CASE("enumerated options: names only, no index") {
  fxc::Options o;
  CHECK(parse({"--backend=aot_eager", "--mode=train", "--device=cpu", "g.pt2"}, &o) == -1);
  CHECK(o.backend == fxc::Backend::AotEager);
  CHECK(o.mode == fxc::Mode::Train);
  CHECK(o.device == fxc::DeviceKind::Cpu);
  fxc::Options bad;
  CHECK(parse({"--backend=0", "g.pt2"}, &bad) == 2);
  fxc::Options typo;
  CHECK(parse({"--emit=ptxx", "g.pt2"}, &typo) == 2);
}

TEST_CASE("explicitly given tolerances and -Werror are recorded") {
  fxc::Options o;
  CHECK(parse({"--rtol=1e-3", "-Werror", "g.pt2"}, &o) == -1);
  CHECK(o.rtol_given);
  CHECK_FALSE(o.atol_given);
  CHECK(o.werror);
  CHECK_THROWS_AS(fxc::report_warning(o, "argument unused"), fxc::UsageError);
}
