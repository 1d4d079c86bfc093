#include "submitter/collector/event_validation.h"

#include <gtest/gtest.h>

#include <string>

namespace ix {
namespace {

const char kGood[] = R"({"id":"1234.0:1","event":"started","step":"1234.0","time":1764691740.25})";

// The one event of `[event]`, or the batch's error.
Result<std::vector<ValidEvent>> One(const std::string& event) { return ParseEventBatch("[" + event + "]"); }

std::string ErrorOf(const std::string& event) {
  Result<std::vector<ValidEvent>> r = One(event);
  return r ? "" : r.error().message;
}

// kGood with `field` set to `json` (added when missing).
std::string With(const std::string& field, const std::string& json) {
  std::string e = kGood;
  e.pop_back();
  return e + ",\"" + field + "\":" + json + "}";
}

// kGood's fields, with `field` replaced by `json` (or left out when json is "").
std::string Replacing(const std::string& field, const std::string& json) {
  const std::pair<const char*, const char*> fields[] = {
      {"id", "\"1234.0:1\""}, {"event", "\"started\""}, {"step", "\"1234.0\""}, {"time", "1"}};
  std::string out = "{";
  for (const auto& [name, value] : fields) {
    const std::string v = name == field ? json : value;
    if (v.empty()) continue;
    out += (out.size() > 1 ? "," : "") + std::string("\"") + name + "\":" + v;
  }
  return out + "}";
}

TEST(EventBatch, AcceptsTheProtocolsFieldsAndKeepsTheRestAsJson) {
  Result<std::vector<ValidEvent>> r = ParseEventBatch(
      std::string("[") + kGood + R"(, {"id":"1234.batch:7","event":"entry","step":"1234.batch","time":5,)" +
      R"("sweep":"sw-20261202-160900-ab12","entry":3,"node":"gpu-01","state":"running",)" +
      R"("sender":{"pid":1,"uid":1000,"gid":1000},"gpus":[0,1]}])");
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r.value().size(), 2u);
  const ValidEvent& a = r.value()[0];
  EXPECT_EQ(a.id, "1234.0:1");
  EXPECT_EQ(a.event, "started");
  EXPECT_EQ(a.step, "1234.0");
  EXPECT_DOUBLE_EQ(a.time, 1764691740.25);
  EXPECT_FALSE(a.sweep || a.entry || a.node);
  EXPECT_EQ(a.body, kGood);
  const ValidEvent& b = r.value()[1];
  EXPECT_EQ(b.sweep, "sw-20261202-160900-ab12");
  EXPECT_EQ(b.entry, 3);
  EXPECT_EQ(b.node, "gpu-01");
  EXPECT_DOUBLE_EQ(b.time, 5);
  EXPECT_NE(b.body.find(R"("sender":{"pid":1,"uid":1000,"gid":1000},"gpus":[0,1])"), std::string::npos) << b.body;
}

TEST(EventBatch, TheBodyIsCompactJson) {
  Result<std::vector<ValidEvent>> r = One(" { \"id\" : \"a:1\" ,\n \"event\":\"ready\", \"step\":\"s\", \"time\": 2 } ");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r.value()[0].body, R"({"id":"a:1","event":"ready","step":"s","time":2})");
}

TEST(EventBatch, NumbersAreStoredAsTheAgentWroteThem) {
  // Each would change by an ulp if it were read and printed again
  // (fuzz/collector_batch_fuzz).
  const std::string event =
      R"({"id":"a:1","event":"ready","step":"s","time":1764691740.1234567,"x":[-218446744073709571615,1e-400,-0]})";
  Result<std::vector<ValidEvent>> r = One(event);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r.value()[0].body, event);
  EXPECT_EQ(r.value()[0].time, 1764691740.1234567);
  EXPECT_EQ(ErrorOf(With("x", "1.7976931348623159e308")), "events[0]: x: holds a number beyond the range of a double");
}

TEST(EventBatch, AnEmptyArrayIsAnEmptyBatch) {
  Result<std::vector<ValidEvent>> r = ParseEventBatch("[]");
  ASSERT_TRUE(r);
  EXPECT_TRUE(r.value().empty());
}

TEST(EventBatch, RefusesWhatIsNotAJsonArrayOfObjects) {
  for (const char* body : {"", "{", "[", "nul", "[1,]", "[] []", "[{}]x"}) {
    Result<std::vector<ValidEvent>> r = ParseEventBatch(body);
    ASSERT_FALSE(r) << body;
    EXPECT_NE(r.error().message.find("body: not valid JSON"), std::string::npos) << r.error().message;
  }
  EXPECT_EQ(ParseEventBatch(kGood).error().message, "body: must be a JSON array of events");
  EXPECT_EQ(ParseEventBatch("[1]").error().message, "events[0]: must be a JSON object");
  EXPECT_EQ(ParseEventBatch(std::string("[") + kGood + ",[]]").error().message, "events[1]: must be a JSON object");
}

TEST(EventBatch, RefusesInvalidUtf8) {
  Result<std::vector<ValidEvent>> r = One(With("note", "\"\xff\xfe\""));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("not valid JSON"), std::string::npos) << r.error().message;
}

TEST(EventBatch, TheWholeBodysProblemsComeBeforeAnyEventsOwn) {
  const std::string bad = Replacing("time", "\"now\"");
  EXPECT_NE(ErrorOf(bad + "] x").find("body: not valid JSON"), std::string::npos);
  std::string many = "[" + bad;
  for (int i = 0; i < 1000; ++i) many += std::string(",") + kGood;
  EXPECT_EQ(ParseEventBatch(many + "]").error().message, "body: 1001 events; at most 1000 are allowed per request");
  EXPECT_EQ(ParseEventBatch("{\"events\":[" + bad + "]}").error().message, "body: must be a JSON array of events");
}

TEST(EventBatch, RefusesAnEscapedUnpairedSurrogate) {
  // Valid JSON, but RapidJSON would store bytes that are not UTF-8.
  EXPECT_EQ(ErrorOf(With("note", R"("\udc00")")),
            "events[0]: note: holds a string that is not UTF-8 (an escaped unpaired surrogate)");
  EXPECT_TRUE(One(With("note", R"("\ud83d\ude00")")));
}

TEST(EventBatch, OneBadEventFailsTheBatchAndIsNamed) {
  const std::string body = std::string("[") + kGood + "," + kGood + "," + Replacing("time", "\"now\"") + "]";
  Result<std::vector<ValidEvent>> r = ParseEventBatch(body);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "events[2]: time: must be a number (unix seconds)");
}

TEST(EventBatch, DuplicateIdsInOneBatchAreKeptForTheStore) {
  Result<std::vector<ValidEvent>> r = ParseEventBatch(std::string("[") + kGood + "," + kGood + "]");
  ASSERT_TRUE(r);
  EXPECT_EQ(r.value().size(), 2u);
}

TEST(EventBatch, AtMostAThousandEvents) {
  std::string body = "[";
  for (int i = 0; i < 1001; ++i) body += std::string(i ? "," : "") + kGood;
  Result<std::vector<ValidEvent>> r = ParseEventBatch(body + "]");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "body: 1001 events; at most 1000 are allowed per request");
  body = "[";
  for (int i = 0; i < 1000; ++i) body += std::string(i ? "," : "") + kGood;
  EXPECT_TRUE(ParseEventBatch(body + "]"));
}

TEST(EventBatch, AtMostFourMebibytes) {
  std::string body = "[" + std::string(kMaxEventsBodyBytes, ' ') + "]";
  Result<std::vector<ValidEvent>> r = ParseEventBatch(body);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("at most 4194304"), std::string::npos) << r.error().message;
}

TEST(EventBatch, AnEventIsAtMost64KiBAsStored) {
  // The padding that makes the compact event exactly the limit, then one more byte.
  const std::string base = With("pad", "\"\"");
  const std::string fits = With("pad", "\"" + std::string(kMaxEventBytes - base.size(), 'x') + "\"");
  ASSERT_TRUE(One(fits)) << One(fits).error().message;
  EXPECT_EQ(One(fits).value()[0].body.size(), kMaxEventBytes);
  const std::string over = With("pad", "\"" + std::string(kMaxEventBytes - base.size() + 1, 'x') + "\"");
  EXPECT_EQ(ErrorOf(over), "events[0]: is 65537 bytes as compact JSON; at most 65536 are allowed");
  // Whitespace in the request does not count: it is not stored.
  EXPECT_TRUE(One(" " + fits + std::string(100, ' ')));
}

TEST(EventBatch, NestingIsBounded) {
  std::string deep = "1";
  for (int i = 1; i < kMaxEventDepth; ++i) deep = "[" + deep + "]";
  EXPECT_TRUE(One(With("deep", deep))) << "the event object and 31 arrays: 32 levels";
  EXPECT_EQ(ErrorOf(With("deep", "[" + deep + "]")), "events[0]: nests objects and arrays deeper than 32 levels");
  // Far deeper than any stack: refused by the iterative parser's result, not a crash.
  const std::string very = std::string(200000, '[') + std::string(200000, ']');
  EXPECT_FALSE(One(With("deep", very)));
}

TEST(EventBatch, RefusesATopLevelFieldTwice) {
  EXPECT_EQ(ErrorOf(With("id", "\"other:2\"")), "events[0]: field \"id\" appears more than once");
}

TEST(EventId, MustBeStepColonDigits) {
  for (const char* id : {"\"1234.0:1\"", "\"1234.batch:18446744073709551616\"", "\"a b/c:0\"", "\"\\u00e9:1\""}) {
    EXPECT_TRUE(One(Replacing("id", id))) << id << ": " << ErrorOf(Replacing("id", id));
  }
  for (const char* id : {"\":1\"", "\"1234.0:\"", "\"1234.0\"", "\"a:b:1\"", "\"a:1x\"", "\"a:-1\"", "\"a:1 \""}) {
    EXPECT_EQ(ErrorOf(Replacing("id", id)),
              "events[0]: id: must be STEP:SEQ (no ':' in STEP, SEQ decimal digits), 1 to 200 bytes")
        << id;
  }
  EXPECT_EQ(ErrorOf(Replacing("id", "")), "events[0]: id: missing; must be a string of 1 to 200 bytes, STEP:SEQ");
  for (const char* id : {"1", "\"\"", "null", "[\"a:1\"]"}) {
    EXPECT_EQ(ErrorOf(Replacing("id", id)), "events[0]: id: must be a string of 1 to 200 bytes, STEP:SEQ") << id;
  }
  const std::string at_limit = "\"" + std::string(198, 's') + ":1\"";
  EXPECT_TRUE(One(Replacing("id", at_limit)));
  const std::string over = "\"" + std::string(199, 's') + ":1\"";
  EXPECT_FALSE(One(Replacing("id", over)));
}

TEST(EventName, LowercaseAndUnderscoreUpTo32) {
  EXPECT_TRUE(One(Replacing("event", "\"gpu_telemetry\"")));
  EXPECT_TRUE(One(Replacing("event", "\"" + std::string(32, 'a') + "\"")));
  for (const std::string& bad : {std::string("\"Started\""), std::string("\"ready1\""), std::string("\"a-b\""),
                                 std::string("\"\""), "\"" + std::string(33, 'a') + "\"", std::string("3")}) {
    EXPECT_FALSE(One(Replacing("event", bad))) << bad;
  }
  EXPECT_EQ(ErrorOf(Replacing("event", "\"a-b\"")), "events[0]: event: must be 1 to 32 characters from a-z and _");
}

TEST(EventStep, OneTo64Bytes) {
  EXPECT_TRUE(One(Replacing("step", "\"" + std::string(64, 's') + "\"")));
  EXPECT_EQ(ErrorOf(Replacing("step", "\"" + std::string(65, 's') + "\"")),
            "events[0]: step: must be a string of 1 to 64 bytes");
  EXPECT_FALSE(One(Replacing("step", "\"\"")));
  EXPECT_FALSE(One(Replacing("step", "12")));
  EXPECT_EQ(ErrorOf(Replacing("step", "")), "events[0]: step: missing; must be a string of 1 to 64 bytes");
}

TEST(EventTime, AnyFiniteNumber) {
  for (const char* t : {"0", "-1", "1.5e9", "1764691740.123456"}) EXPECT_TRUE(One(Replacing("time", t))) << t;
  for (const char* t : {"\"1\"", "null", "true"}) {
    EXPECT_EQ(ErrorOf(Replacing("time", t)), "events[0]: time: must be a number (unix seconds)") << t;
  }
  EXPECT_EQ(ErrorOf(Replacing("time", "")), "events[0]: time: missing; must be a number (unix seconds)");
  EXPECT_FALSE(One(Replacing("time", "NaN")));
  EXPECT_FALSE(One(Replacing("time", "1e999")));
}

TEST(EventSweep, OptionalAndASweepId) {
  EXPECT_TRUE(One(With("sweep", "\"sw-1.a_b\"")));
  EXPECT_TRUE(One(With("sweep", "\"" + std::string(64, 'a') + "\"")));
  for (const std::string& bad :
       {std::string("\".\""), std::string("\"..\""), std::string("\"\""), std::string("\"a/b\""),
        std::string("\"a b\""), std::string("\"%2e%2e\""), std::string("\"a\\u0000b\""),
        "\"" + std::string(65, 'a') + "\""}) {
    const std::string e = ErrorOf(With("sweep", bad));
    EXPECT_EQ(e.rfind("events[0]: sweep: must be 1 to 64 characters from A-Z a-z 0-9 . _ -, not \".\" or \"..\"", 0),
              0u)
        << bad << ": " << e;
  }
  EXPECT_EQ(ErrorOf(With("sweep", "null")), "events[0]: sweep: must be a string (or absent)");
  EXPECT_EQ(ErrorOf(With("sweep", "7")), "events[0]: sweep: must be a string (or absent)");
}

TEST(EventEntry, OptionalNonNegativeInteger) {
  for (const char* e : {"0", "7", "9223372036854775807"}) EXPECT_TRUE(One(With("entry", e))) << e;
  for (const char* e : {"-1", "1.5", "1.0", "\"3\"", "null", "9223372036854775808", "1e3"}) {
    EXPECT_EQ(ErrorOf(With("entry", e)), "events[0]: entry: must be a non-negative integer (or absent)") << e;
  }
}

TEST(EventNode, OptionalOneTo255Bytes) {
  EXPECT_TRUE(One(With("node", "\"" + std::string(255, 'n') + "\"")));
  for (const std::string& bad : {std::string("\"\""), "\"" + std::string(256, 'n') + "\"", std::string("1")}) {
    EXPECT_EQ(ErrorOf(With("node", bad)), "events[0]: node: must be a string of 1 to 255 bytes (or absent)") << bad;
  }
}

TEST(Names, EntryIndex) {
  EXPECT_EQ(ParseEntryIndex("0").value(), 0);
  EXPECT_EQ(ParseEntryIndex("0042").value(), 42);
  EXPECT_EQ(ParseEntryIndex("9223372036854775807").value(), INT64_MAX);
  for (const char* bad : {"", "-1", "+1", "1.0", "1e3", "9223372036854775808", " 1", "%31"}) {
    EXPECT_FALSE(ParseEntryIndex(bad)) << bad;
  }
}

TEST(ResultPath, ThreeCheckedParts) {
  Result<ResultTarget> t = ParseResultTarget("sw-1/12/result.json");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t.value().sweep, "sw-1");
  EXPECT_EQ(t.value().entry, 12);
  EXPECT_EQ(t.value().name, "result.json");
  t = ParseResultTarget("sw-1/12/aiperf_artifacts/profile_export.jsonl");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t.value().name, "aiperf_artifacts/profile_export.jsonl") << "one directory level";
}

TEST(ResultPath, RefusesTraversalAndEncodedTricks) {
  const std::pair<const char*, const char*> cases[] = {
      {"sw-1/12/../x", "NAME in the path"},
      {"sw-1/12/a/../x", "path: must be /v1/results/SWEEP/ENTRY/NAME or /v1/results/SWEEP/ENTRY/DIR/NAME"},
      {"sw-1/12/a/b/c", "path: must be"},
      {"sw-1/12/a/..", "NAME in the path"},
      {"sw-1/12", "path: must be"},
      {"sw-1/12/", "NAME in the path"},
      {"sw-1/12/..", "NAME in the path"},
      {"sw-1/12/.", "NAME in the path"},
      {"../12/x", "SWEEP in the path"},
      {"./12/x", "SWEEP in the path"},
      {"%2e%2e/12/x", "SWEEP in the path"},
      {"sw-1/12/%2e%2e", "NAME in the path"},
      {"sw-1/12/a%2Fb", "NAME in the path"},
      {"sw-1/12/..%2F..%2Fetc%2Fpasswd", "NAME in the path"},
      {"sw-1/12/a%00b", "NAME in the path"},
      {"sw-1/-1/x", "ENTRY in the path"},
      {"sw-1/1a/x", "ENTRY in the path"},
      {"sw-1/%31/x", "ENTRY in the path"},
      {"sw-1//x", "ENTRY in the path"},
  };
  for (const auto& [rest, want] : cases) {
    Result<ResultTarget> t = ParseResultTarget(rest);
    ASSERT_FALSE(t) << rest;
    EXPECT_EQ(t.error().message.rfind(want, 0), 0u) << rest << ": " << t.error().message;
  }
  EXPECT_FALSE(ParseResultTarget(std::string_view("sw-1/1/a\0b", 10)));
}

}  // namespace
}  // namespace ix
