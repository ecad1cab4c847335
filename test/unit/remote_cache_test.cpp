// Unit tests for the remote cache's URLs and the key manifests --explain-cache compares
// (driver/remote_cache.h). The Redis round trips are test/remote_cache.sh's.
#include "driver/remote_cache.h"

#include <doctest/doctest.h>

#include <string>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace fxc;

TEST_CASE("parse_redis_url: host, port, database, credentials") {
  std::string err;
  std::optional<RedisUrl> u = parse_redis_url("redis://127.0.0.1:6390/3", &err);
  REQUIRE(u);
  CHECK(u->host == "127.0.0.1");
  CHECK(u->port == 6390);
  CHECK(u->db == 3);
  CHECK(u->user.empty());
  CHECK(u->password.empty());

  u = parse_redis_url("redis://cache.internal", &err);
  REQUIRE(u);
  CHECK(u->host == "cache.internal");
  CHECK(u->port == 6379);
  CHECK(u->db == 0);

  u = parse_redis_url("redis://alice:s%40cr3t:x@host:7000", &err);
  REQUIRE(u);
  CHECK(u->user == "alice");
  CHECK(u->password == "s@cr3t:x");
  CHECK(u->host == "host");
  CHECK(u->port == 7000);

  u = parse_redis_url("redis://:pw@host:1/0", &err); // password only (requirepass)
  REQUIRE(u);
  CHECK(u->user.empty());
  CHECK(u->password == "pw");

  u = parse_redis_url("redis://[::1]:6379/2", &err);
  REQUIRE(u);
  CHECK(u->host == "::1");
  CHECK(u->db == 2);
}

TEST_CASE("parse_redis_url: malformed URLs are refused without showing the password") {
  for (const char* bad : {"http://host:1", "redis://", "redis://host:", "redis://host:0",
                          "redis://host:70000", "redis://host:12a", "redis://host:1/x",
                          "redis://u:p%4@host:1", "redis://[::1:1", "host:6379"}) {
    std::string err;
    CHECK_MESSAGE(!parse_redis_url(bad, &err), bad);
    CHECK(err.find("expected redis://") != std::string::npos);
  }
  std::string err;
  CHECK(!parse_redis_url("redis://bob:hunter2@host:99999", &err));
  CHECK(err.find("hunter2") == std::string::npos);
}

TEST_CASE("redact_redis_url hides the password and nothing else") {
  CHECK(redact_redis_url("redis://alice:secret@h:1/2") == "redis://alice:***@h:1/2");
  CHECK(redact_redis_url("redis://:secret@h:1") == "redis://:***@h:1");
  CHECK(redact_redis_url("redis://secret@h:1") == "redis://***@h:1");
  CHECK(redact_redis_url("redis://h:1/0") == "redis://h:1/0");
  CHECK(redact_redis_url("redis://u:a/b@h:1") == "redis://u:***@h:1");
}

TEST_CASE("manifests round-trip their components") {
  std::vector<KeyComponent> c = {{"fxc", "0.2.0", "d1"},
                                 {"graph", "/m/model.pt2", "d2"},
                                 {"weights", "/m/w.safetensors", "d3"}};
  std::string text = manifest_json("0123456789abcdef0123456789abcdef", c, R"({"size":3})");
  std::string key;
  std::vector<KeyComponent> back;
  REQUIRE(parse_manifest(text, &key, &back));
  CHECK(key == "0123456789abcdef0123456789abcdef");
  REQUIRE(back.size() == 3);
  CHECK(back[1].name == "graph");
  CHECK(back[1].value == "/m/model.pt2");
  CHECK(back[2].digest == "d3");
  CHECK(!parse_manifest("{}", &key, &back));
  CHECK(!parse_manifest("not json", &key, &back));
  CHECK(!parse_manifest(R"({"version":1,"key":"k","components":[["a","b"]]})", &key, &back));
}

TEST_CASE("differing_components names what differs, by flag, file or field") {
  std::vector<KeyComponent> want = {{"fxc", "0.2.0", "a"},
                                    {"tf32", "all", "t1"},
                                    {"graph", "/x/m.pt2", "g"},
                                    {"weights", "/x/w1.bin", "w1"},
                                    {"weights", "/x/w2.bin", "w2"}};
  std::vector<KeyComponent> have = want;
  CHECK(differing_components(want, have).empty());
  CHECK(describe_difference({}) == "all components equal");

  have[1] = {"tf32", "conv", "t0"};
  std::vector<std::string> d = differing_components(want, have);
  REQUIRE(d.size() == 1);
  CHECK(d[0] == "--tf32");
  CHECK(describe_difference(d) == "miss: --tf32 differs; all else equal");

  // The second weights file differs: matched by occurrence, named by its file.
  have = want;
  have[4].digest = "other";
  d = differing_components(want, have);
  REQUIRE(d.size() == 1);
  CHECK(d[0] == "weights w2.bin");

  // A component only one side has (a plugin, a CUDA arch) differs too.
  have = want;
  have.push_back({"plugin", "/p/libop.so", "p"});
  have[2].digest = "g2";
  d = differing_components(want, have);
  REQUIRE(d.size() == 2);
  CHECK(d[0] == "graph");
  CHECK(d[1] == "plugin libop.so");
  CHECK(describe_difference(d) == "miss: graph and plugin libop.so differ; all else equal");
}

TEST_CASE("CacheKeyBuilder records each component with its digest") {
  CacheKeyBuilder k;
  k.add("tf32", "all");
  const std::vector<KeyComponent>& c = k.components();
  REQUIRE(c.size() == 2); // the entry format, then the field
  CHECK(c[1].name == "tf32");
  CHECK(c[1].value == "all");
  CHECK(c[1].digest == content_digest("all"));
}

TEST_CASE("a RemoteCache of a server that is not there fails once and stays off") {
  // Port 1 on localhost: refused at once.
  RemoteCache r("redis://127.0.0.1:1/0", 60);
  CHECK(r.enabled());
  CHECK(!r.get("0123456789abcdef0123456789abcdef"));
  CHECK(!r.enabled());
  CHECK(!r.put("0123456789abcdef0123456789abcdef", {}, "x"));
  CHECK(r.stats().commands == 0);
}

TEST_CASE("a server that goes away in the middle of a large write: the put fails, and stays off") {
  // A fake server: answers the first command (EXISTS) with 0, reads the start of the SET of a
  // large value that follows and closes the connection, so that the rest is written into a dead
  // socket (a failed command, never a SIGPIPE that would kill fxc, never a hang).
  int ls = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(ls >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(ls, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  socklen_t len = sizeof addr;
  REQUIRE(::getsockname(ls, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  REQUIRE(::listen(ls, 1) == 0);
  std::thread server([ls] {
    int c = ::accept(ls, nullptr, nullptr);
    if (c < 0) return;
    char buf[4096];
    (void)::read(c, buf, sizeof buf); // EXISTS <key>
    (void)::write(c, ":0\r\n", 4);
    // Read the start of the SET, then go away in the middle of it.
    for (size_t got = 0; got < (size_t(1) << 20);) {
      ssize_t n = ::read(c, buf, sizeof buf);
      if (n <= 0) break;
      got += size_t(n);
    }
    ::close(c);
  });
  RemoteCache r("redis://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)), 60);
  std::string big(size_t(32) << 20, 'x');
  CHECK(!r.put("0123456789abcdef0123456789abcdef", {}, big));
  CHECK(!r.enabled());
  server.join();
  ::close(ls);
}
