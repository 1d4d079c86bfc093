#include "fake_common.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace ixfake {
namespace {

// ------------------------------------------------------------ parse_loose

TEST(ParseLoose, FlagsTakeTheNextNonFlagTokenAsValue) {
  LooseArgs a = parse_loose({"/models/m", "--port", "8000", "--enable-expert-parallel", "--tensor-parallel-size", "1",
                             "--engram-config", R"({"cpu_offload":true})", "--disable-uvicorn-access-log"});
  ASSERT_EQ(a.positionals, std::vector<std::string>{"/models/m"});
  ASSERT_EQ(a.flags.size(), 5u);
  EXPECT_EQ(a.last("--port")->values, std::vector<std::string>{"8000"});
  EXPECT_TRUE(a.last("--enable-expert-parallel")->values.empty());
  EXPECT_EQ(a.last("--engram-config")->values.front(), R"({"cpu_offload":true})");
  EXPECT_TRUE(a.last("--disable-uvicorn-access-log")->values.empty());
  EXPECT_EQ(a.last("--nope"), nullptr);
}

TEST(ParseLoose, EqualsFormUnderscoresAndLastWins) {
  LooseArgs a = parse_loose({"--port=1", "--max_model_len", "4096", "--port", "2"});
  EXPECT_EQ(a.last("--port")->values.front(), "2");
  EXPECT_EQ(a.last("--max-model-len")->values.front(), "4096");
}

TEST(ParseLoose, NegativeNumbersAndEmptyStringsAreValues) {
  LooseArgs a = parse_loose({"--max-model-len", "-1", "--safetensors-load-strategy", "", "-dp", "4"});
  EXPECT_EQ(a.last("--max-model-len")->values.front(), "-1");
  EXPECT_EQ(a.last("--safetensors-load-strategy")->values.front(), "");
  EXPECT_EQ(a.last("-dp")->values.front(), "4");
  EXPECT_TRUE(a.positionals.empty());
}

TEST(ParseLoose, MultiValueFlagsAndDoubleDash) {
  LooseArgs a = parse_loose({"--served-model-name", "a", "b", "--port", "1", "--", "--not-a-flag"},
                            {"--served-model-name"});
  EXPECT_EQ(a.last("--served-model-name")->values, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(a.positionals, std::vector<std::string>{"--not-a-flag"});
}

TEST(ParseLoose, NoValueFlagsLeaveTheNextTokenAPositional) {
  LooseArgs a = parse_loose({"--headless", "/models/m", "--headless=1", "-dp", "2"}, {}, {"--headless"});
  EXPECT_EQ(a.positionals, std::vector<std::string>{"/models/m"});
  ASSERT_EQ(a.flags.size(), 3u);
  EXPECT_TRUE(a.flags[0].values.empty());
  EXPECT_EQ(a.last("--headless")->values, std::vector<std::string>{"1"});  // the caller refuses it
  EXPECT_EQ(a.last("-dp")->values.front(), "2");
}

TEST(IsFlagToken, DistinguishesFlagsFromValues) {
  for (const char* flag : {"--port", "-dp"}) EXPECT_TRUE(is_flag_token(flag)) << flag;
  for (const char* value : {"-1", "-0.5", "--", "-", "{\"a\":1}", ""}) EXPECT_FALSE(is_flag_token(value)) << value;
}

// ----------------------------------------------------------- parse_strict

const std::vector<OptionSpec> kSpecs = {
    {"--worker-urls", Arity::kMany, "WORKER_URLS"},
    {"--port", Arity::kOne, "PORT"},
    {"--disable-retries", Arity::kNone, ""},
};

TEST(ParseStrict, AcceptsDeclaredOptions) {
  StrictArgs a = parse_strict({"--worker-urls", "http://a:1", "http://b:2", "--port=30000", "--disable-retries"}, kSpecs);
  ASSERT_TRUE(a.ok()) << a.error;
  EXPECT_EQ(a.values("--worker-urls"), (std::vector<std::string>{"http://a:1", "http://b:2"}));
  EXPECT_EQ(a.value("--port"), "30000");
  EXPECT_TRUE(a.has("--disable-retries"));
  EXPECT_FALSE(a.value("--disable-retries").has_value());
}

TEST(ParseStrict, UnknownOptionIsAClapError) {
  StrictArgs a = parse_strict({"--port", "1", "--bogus", "x"}, kSpecs);
  EXPECT_EQ(a.error, "error: unexpected argument '--bogus' found");
}

TEST(ParseStrict, MissingValueRepeatAndPositional) {
  EXPECT_EQ(parse_strict({"--port"}, kSpecs).error,
            "error: a value is required for '--port <PORT>' but none was supplied");
  EXPECT_EQ(parse_strict({"--port", "--disable-retries"}, kSpecs).error,
            "error: a value is required for '--port <PORT>' but none was supplied");
  EXPECT_EQ(parse_strict({"--port", "1", "--port", "2"}, kSpecs).error,
            "error: the argument '--port <PORT>' cannot be used multiple times");
  EXPECT_EQ(parse_strict({"stray"}, kSpecs).error, "error: unexpected argument 'stray' found");
  EXPECT_EQ(parse_strict({"--disable-retries=1"}, kSpecs).error,
            "error: unexpected value '1' for '--disable-retries' found; no more were expected");
  EXPECT_TRUE(parse_strict({"stray"}, kSpecs, true).ok());
}

// ------------------------------------------------------------------ numbers

TEST(Numbers, ParseIntIsStrict) {
  EXPECT_EQ(parse_int("8000", 0, 65535), 8000);
  EXPECT_EQ(parse_int("-1", -1, 5), -1);
  for (const char* bad : {"65536", "80a", " 8", ""}) EXPECT_FALSE(parse_int(bad, 0, 65535)) << bad;
}

TEST(Numbers, ParseSeconds) {
  EXPECT_EQ(parse_seconds("0.25"), 0.25);
  EXPECT_EQ(parse_seconds("90"), 90.0);
  for (const char* bad : {"-1", "abc", "1s", "nan", "inf", ""}) EXPECT_FALSE(parse_seconds(bad)) << bad;
}

// ------------------------------------------------------------ consistent hash

TEST(Hash, StableValues) {
  // Pinned: a session must land on the same rank in every process, on every
  // machine and in every build; changing the hash moves every session.
  EXPECT_EQ(hash64(""), 0xf52a15e9a9b5e89bULL);
  EXPECT_EQ(hash64("sess-1"), 0xa96a83c87c0f956eULL);
  EXPECT_NE(hash64("sess-1"), hash64("sess-2"));
}

std::vector<std::string> dp_targets(int n) {
  std::vector<std::string> t;
  for (int r = 0; r < n; ++r) t.push_back("http://localhost:20001@" + std::to_string(r));
  return t;
}

TEST(HashRing, SameKeySameMember) {
  HashRing ring(dp_targets(4));
  HashRing again(dp_targets(4));
  for (int s = 0; s < 200; ++s) {
    std::string key = "sess-" + std::to_string(s);
    EXPECT_EQ(ring.lookup(key), ring.lookup(key));
    EXPECT_EQ(ring.lookup(key), again.lookup(key));
    EXPECT_LT(ring.lookup(key), 4u);
  }
}

TEST(HashRing, PinnedPlacement) {
  // ix-fake-client's default sessions sess-0..7 on a dep4 router.
  HashRing ring(dp_targets(4));
  std::vector<std::size_t> got;
  for (int s = 0; s < 8; ++s) got.push_back(ring.lookup("sess-" + std::to_string(s)));
  EXPECT_EQ(got, (std::vector<std::size_t>{0, 1, 3, 2, 0, 2, 3, 1}));
}

TEST(HashRing, SpreadsKeysOverAllMembers) {
  HashRing ring(dp_targets(4));
  std::map<std::size_t, int> count;
  for (int s = 0; s < 4000; ++s) ++count[ring.lookup("sess-" + std::to_string(s))];
  ASSERT_EQ(count.size(), 4u);
  for (const auto& [member, n] : count) {
    EXPECT_GT(n, 600) << "member " << member;  // 1000 expected each
    EXPECT_LT(n, 1400) << "member " << member;
  }
  // Eight sessions, as the default client runs, land on more than one rank.
  std::set<std::size_t> used;
  for (int s = 0; s < 8; ++s) used.insert(ring.lookup("sess-" + std::to_string(s)));
  EXPECT_GT(used.size(), 1u);
}

TEST(HashRing, AddingAMemberMovesFewKeys) {
  HashRing four(dp_targets(4));
  HashRing five(dp_targets(5));
  int moved = 0;
  const int keys = 4000;
  for (int s = 0; s < keys; ++s) {
    std::string key = "sess-" + std::to_string(s);
    std::size_t a = four.lookup(key);
    std::size_t b = five.lookup(key);
    if (a != b) {
      ++moved;
      EXPECT_EQ(b, 4u) << key << " moved between old members";
    }
  }
  EXPECT_GT(moved, keys / 10);  // about 1/5 move to the new member
  EXPECT_LT(moved, keys * 3 / 10);
}

TEST(HashRing, SingleMemberAndEmpty) {
  HashRing one({"http://a:1"});
  EXPECT_EQ(one.lookup("x"), 0u);
  EXPECT_EQ(one.members(), 1u);
  HashRing none({});
  EXPECT_TRUE(none.empty());
}

// --------------------------------------------------------------------- URLs

TEST(HttpUrl, Parses) {
  const struct {
    const char* url;
    const char* host;
    int port;
    const char* base_path;
  } cases[] = {{"http://localhost:20000", "localhost", 20000, ""},
               {"http://10.0.0.1/v1/", "10.0.0.1", 80, "/v1"},
               {"http://[::1]:8000/x", "::1", 8000, "/x"}};
  for (const auto& c : cases) {
    const HttpUrl u = parse_http_url(c.url);
    ASSERT_TRUE(u.ok()) << c.url << ": " << u.error;
    EXPECT_EQ(u.host, c.host) << c.url;
    EXPECT_EQ(u.port, c.port) << c.url;
    EXPECT_EQ(u.base_path, c.base_path) << c.url;
  }
}

TEST(HttpUrl, Rejects) {
  for (const char* url : {"https://h:1", "localhost:8000", "http://:80", "http://h:0", "http://h:99999", "http://h:",
                          "http://[::1"}) {
    EXPECT_FALSE(parse_http_url(url).ok()) << url;
  }
}

// ---------------------------------------------------------------------- SSE

TEST(Sse, SplitsEventsAcrossChunks) {
  SseParser p;
  EXPECT_TRUE(p.feed("data: {\"a\"").empty());
  auto e = p.feed(":1}\n\ndata: [DO");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0], "{\"a\":1}");
  e = p.feed("NE]\r\n\r\n: comment\n\ndata:x\ndata: y\n\n");
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0], "[DONE]");
  EXPECT_EQ(e[1], "x\ny");
  EXPECT_TRUE(p.pending().empty());
}

// --------------------------------------------------------------- statistics

TEST(Percentile, NearestRank) {
  EXPECT_FALSE(percentile({}, 50));
  EXPECT_EQ(percentile({5}, 99), 5);
  EXPECT_EQ(percentile({4, 1, 3, 2}, 50), 2);
  EXPECT_EQ(percentile({4, 1, 3, 2}, 99), 4);
  EXPECT_EQ(percentile({4, 1, 3, 2}, 0), 1);
}

}  // namespace
}  // namespace ixfake
