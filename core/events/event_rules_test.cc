#include "core/events/event_rules.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <string>
#include <vector>

namespace ix {
namespace {

const char kGood[] = R"({"id":"1234.0:1","event":"started","step":"1234.0","time":1764691740.25})";

// What checking `text` as one event found: an empty rule when it kept
// every rule (and the checker then says done).
EventProblem Check(std::string_view text, EventStage stage = EventStage::kStamped) {
  EventChecker checker(stage);
  rapidjson::BaseReaderHandler<> sink;
  CheckedEventHandler<rapidjson::BaseReaderHandler<>> handler(checker, sink);
  rapidjson::MemoryStream stream(text.data(), text.size());
  rapidjson::Reader reader;
  const rapidjson::ParseResult parsed = reader.Parse<kEventParseFlags>(stream, handler);
  if (parsed) {
    EXPECT_TRUE(checker.done()) << text;
    EXPECT_TRUE(checker.problem().rule.empty()) << text;
    return {};
  }
  EXPECT_FALSE(checker.done()) << text;
  EXPECT_FALSE(checker.problem().rule.empty()) << "a parse error, not a rule: " << text;
  return checker.problem();
}

// kGood with `more` (",\"k\":v...") added at the end.
std::string With(const std::string& more) { return std::string(kGood, sizeof kGood - 2) + more + "}"; }

TEST(EventRules, AGoodEventPassesAtBothStages) {
  EXPECT_EQ(Check(kGood).rule, "");
  EXPECT_EQ(Check(kGood, EventStage::kDatagram).rule, "");
  EXPECT_EQ(Check(With(R"(,"sweep":"sw-1","entry":0,"node":"gpu-01","sender":{"pid":1},"x":[1,{"y":null}])")).rule,
            "");
}

TEST(EventRules, EachRequiredFieldIsNamedWhenMissing) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"event":"ready","step":"1.0","time":1})", "id"},
      {R"({"id":"1.0:1","step":"1.0","time":1})", "event"},
      {R"({"id":"1.0:1","event":"ready","time":1})", "step"},
      {R"({"id":"1.0:1","event":"ready","step":"1.0"})", "time"},
  };
  for (const auto& [text, field] : cases) {
    const EventProblem p = Check(text);
    EXPECT_EQ(p.field, field) << text;
    EXPECT_EQ(p.rule.rfind("missing; must be ", 0), 0u) << p.rule;
    EXPECT_EQ(p.got, "");
  }
  EXPECT_EQ(Check(R"({"time":1})").rule, "missing; must be a string of 1 to 200 bytes, STEP:SEQ");
  EXPECT_EQ(Check(R"({"id":"1.0:1","event":"ready","step":"1.0"})").rule, "missing; must be a number (unix seconds)");
}

TEST(EventRules, FieldRulesNameTheFieldTheRuleAndWhatCame) {
  struct Case {
    std::string more;
    std::string field;
    std::string rule;
    std::string got;
  };
  const std::vector<Case> cases = {
      {R"({"id":"1.0","event":"ready","step":"1.0","time":1})", "id",
       "must be STEP:SEQ (no ':' in STEP, SEQ decimal digits), 1 to 200 bytes", "a string \"1.0\""},
      {R"({"id":5,"event":"ready","step":"1.0","time":1})", "id", "must be a string of 1 to 200 bytes, STEP:SEQ",
       "an integer"},
      {R"({"id":"1.0:1","event":"Ready","step":"1.0","time":1})", "event",
       "must be 1 to 32 characters from a-z and _", "a string \"Ready\""},
      {R"({"id":"1.0:1","event":"ready","step":{"a":1},"time":1})", "step", "must be a string of 1 to 64 bytes",
       "an object"},
      {R"({"id":"1.0:1","event":"ready","step":"1.0","time":[1]})", "time", "must be a number (unix seconds)",
       "an array"},
      {R"({"id":"1.0:1","event":"ready","step":"1.0","time":"\u0001x"})", "time", "must be a number (unix seconds)",
       "a string \"\\x01x\""},
  };
  for (const Case& c : cases) {
    const EventProblem p = Check(c.more);
    EXPECT_EQ(p.field, c.field) << c.more;
    EXPECT_EQ(p.rule, c.rule) << c.more;
    EXPECT_EQ(p.got, c.got) << c.more;
  }
}

TEST(EventRules, IdIsStepColonDigitsOfAtMost200Bytes) {
  for (const char* id : {"1234.0:1", "a b/c:0", "1234.batch:18446744073709551616"}) {
    EXPECT_EQ(Check(R"({"id":")" + std::string(id) + R"(","event":"e","step":"s","time":1})").rule, "") << id;
  }
  for (const char* id : {":1", "1234.0:", "1234.0", "a:b:1", "a:1x", "a:-1", "a:1 ", ""}) {
    EXPECT_EQ(Check(R"({"id":")" + std::string(id) + R"(","event":"e","step":"s","time":1})").field, "id") << id;
  }
  const std::string at_limit = std::string(198, 's') + ":1", over = std::string(199, 's') + ":1";
  EXPECT_EQ(Check(R"({"id":")" + at_limit + R"(","event":"e","step":"s","time":1})").rule, "");
  EXPECT_EQ(Check(R"({"id":")" + over + R"(","event":"e","step":"s","time":1})").field, "id");
}

TEST(EventRules, EventNameStepAndTime) {
  EXPECT_EQ(Check(R"({"id":"a:1","event":")" + std::string(32, 'a') + R"(","step":"s","time":1})").rule, "");
  EXPECT_EQ(Check(R"({"id":"a:1","event":")" + std::string(33, 'a') + R"(","step":"s","time":1})").field, "event");
  EXPECT_EQ(Check(R"({"id":"a:1","event":"a-b","step":"s","time":1})").field, "event");
  EXPECT_EQ(Check(R"({"id":"a:1","event":"e","step":")" + std::string(64, 's') + R"(","time":1})").rule, "");
  EXPECT_EQ(Check(R"({"id":"a:1","event":"e","step":")" + std::string(65, 's') + R"(","time":1})").field, "step");
  EXPECT_EQ(Check(R"({"id":"a:1","event":"e","step":"","time":1})").field, "step");
  for (const char* t : {"0", "-1", "1.5e9", "18446744073709551615"}) {
    EXPECT_EQ(Check(R"({"id":"a:1","event":"e","step":"s","time":)" + std::string(t) + "}").rule, "") << t;
  }
  for (const char* t : {"\"1\"", "null", "true"}) {
    EXPECT_EQ(Check(R"({"id":"a:1","event":"e","step":"s","time":)" + std::string(t) + "}").field, "time") << t;
  }
}

TEST(EventRules, OptionalSweepAndEntry) {
  EXPECT_EQ(Check(With(R"(,"sweep":"sw-1.a_b","entry":9223372036854775807)")).rule, "");
  for (const char* more : {R"(,"sweep":"..")", R"(,"sweep":"a/b")", R"(,"sweep":"")", R"(,"sweep":"a\u0000b")"}) {
    const EventProblem p = Check(With(more));
    EXPECT_EQ(p.field, "sweep") << more;
    EXPECT_EQ(p.rule.rfind("must be 1 to 64 characters from A-Z a-z 0-9 . _ -, not \".\" or \"..\"", 0), 0u) << p.rule;
  }
  EXPECT_EQ(Check(With(R"(,"sweep":7)")).rule, "must be a string (or absent)");
  for (const char* e : {"-1", "1.5", "1.0", "\"3\"", "null", "9223372036854775808", "1e3"}) {
    const EventProblem p = Check(With(R"(,"entry":)" + std::string(e)));
    EXPECT_EQ(p.field, "entry") << e;
    EXPECT_EQ(p.rule, "must be a non-negative integer (or absent)") << e;
  }
}

TEST(EventRules, NodeIsCheckedOnlyOnceStamped) {
  for (const std::string& node : {std::string("7"), std::string("\"\""), "\"" + std::string(256, 'n') + "\"",
                                  std::string("{\"a\":1}")}) {
    EXPECT_EQ(Check(With(",\"node\":" + node), EventStage::kDatagram).rule, "") << node;
    const EventProblem p = Check(With(",\"node\":" + node));
    EXPECT_EQ(p.field, "node") << node;
    EXPECT_EQ(p.rule, "must be a string of 1 to 255 bytes (or absent)");
  }
  EXPECT_EQ(Check(With(",\"node\":\"" + std::string(255, 'n') + "\"")).rule, "");
}

TEST(EventRules, OnlyTopLevelFieldsAreTheProtocols) {
  EXPECT_EQ(Check(With(R"(,"x":{"id":5,"time":"no","entry":-1,"x":1,"x":2})")).rule, "");
}

TEST(EventRules, ATopLevelKeyTwiceIsRefused) {
  const EventProblem p = Check(With(R"(,"id":"other:2")"));
  EXPECT_EQ(p.field, "");
  EXPECT_EQ(p.rule, "field \"id\" appears more than once");
  EXPECT_EQ(Check(With(R"(,"node":1,"node":2)"), EventStage::kDatagram).rule, "field \"node\" appears more than once");
}

TEST(EventRules, TheEventIsAnObject) {
  for (const char* text : {"[1,2]", "\"text\"", "42", "null", "[]"}) {
    const EventProblem p = Check(text);
    EXPECT_EQ(p.field, "") << text;
    EXPECT_EQ(p.rule, "must be a JSON object") << text;
  }
}

TEST(EventRules, NestingIsBoundedAt32Levels) {
  std::string deep = "1";
  for (int i = 1; i < kMaxEventDepth; ++i) deep = "[" + deep + "]";
  EXPECT_EQ(Check(With(",\"deep\":" + deep)).rule, "") << "the event object and 31 arrays: 32 levels";
  EXPECT_EQ(Check(With(",\"deep\":[" + deep + "]")).rule, "nests objects and arrays deeper than 32 levels");
  // Inside a claimed node too: the agent drops it, but reads it first.
  EXPECT_EQ(Check(With(",\"node\":[" + deep + "]"), EventStage::kDatagram).rule,
            "nests objects and arrays deeper than 32 levels");
}

TEST(EventRules, AParsedValuesAcceptStopsAtTheDepthLimit) {
  // A document far deeper than any stack: Accept stops descending at the
  // limit instead of recursing through it.
  const std::string very = With(",\"x\":" + std::string(100000, '[') + std::string(100000, ']'));
  rapidjson::Document d;
  d.Parse<rapidjson::kParseIterativeFlag>(very.data(), very.size());
  ASSERT_FALSE(d.HasParseError());
  EventChecker checker(EventStage::kStamped);
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  CheckedEventHandler<rapidjson::Writer<rapidjson::StringBuffer>> handler(checker, w);
  EXPECT_FALSE(d.Accept(handler));
  EXPECT_EQ(checker.problem().rule, "nests objects and arrays deeper than 32 levels");
}

TEST(EventRules, TheCopyThroughTheHandlerIsTheCompactEvent) {
  rapidjson::Document d;
  const std::string text = " { \"id\" : \"a:1\" ,\n \"event\":\"ready\", \"step\":\"s\", \"time\": 2, \"x\":[1.5,-3,true] } ";
  d.Parse<rapidjson::kParseIterativeFlag>(text.data(), text.size());
  EventChecker checker(EventStage::kStamped);
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  CheckedEventHandler<rapidjson::Writer<rapidjson::StringBuffer>> handler(checker, w);
  ASSERT_TRUE(d.Accept(handler)) << checker.problem().rule;
  EXPECT_TRUE(checker.done());
  EXPECT_STREQ(buf.GetString(), R"({"id":"a:1","event":"ready","step":"s","time":2,"x":[1.5,-3,true]})");
  EXPECT_EQ(checker.fields().time, 2);
}

// `text` checked and copied by an EventWriter, as both ends do; "" when it
// broke a rule.
std::string Copy(std::string_view text, EventChecker& checker) {
  rapidjson::StringBuffer buf;
  EventWriter w(buf);
  CheckedEventHandler<EventWriter> handler(checker, w);
  rapidjson::MemoryStream stream(text.data(), text.size());
  rapidjson::Reader reader;
  if (!reader.Parse<kEventParseFlags>(stream, handler)) return "";
  return {buf.GetString(), buf.GetSize()};
}

TEST(EventRules, NumbersAreCopiedAsTheyCame) {
  // 17 significant digits, and values RapidJSON's default reader gets an
  // ulp wrong: each would change when read and printed again.
  const std::string text =
      R"({"id":"a:1","event":"e","step":"s","time":1764691740.1234567,"x":[-218446744073709571615,1.7646917979999998e84,)"
      R"(0.1E+2,-0,-0.0,1e-400,18446744073709551616]})";
  EventChecker checker(EventStage::kStamped);
  EXPECT_EQ(Copy(text, checker), text);
  EXPECT_TRUE(checker.done());
  EXPECT_EQ(checker.fields().time, 1764691740.1234567);
}

TEST(EventRules, ANumberBeyondADoubleIsRefusedWhereverItIs) {
  for (const char* n : {"1.7976931348623159e308", "-1.8e308", "17976931348623159.0e292"}) {
    EventChecker checker(EventStage::kStamped);
    EXPECT_EQ(Copy(With(R"(,"x":{"y":[)" + std::string(n) + "]}"), checker), "") << n;
    EXPECT_EQ(checker.problem().field, "x") << n;
    EXPECT_EQ(checker.problem().rule, "holds a number beyond the range of a double") << n;
  }
  EXPECT_EQ(Check(R"({"id":"a:1","event":"e","step":"s","time":1.7976931348623157e308})").rule, "");
  EXPECT_EQ(Check(R"({"id":"a:1","event":"e","step":"s","time":1e-400})").rule, "") << "too small reads as 0";
}

TEST(EventRules, AnEscapedUnpairedSurrogateIsRefused) {
  // RapidJSON decodes "\udc00" into bytes that are not UTF-8; a pair is
  // one character, and a lone high surrogate is RapidJSON's own error.
  EXPECT_EQ(Check(With(R"(,"x":"\ud83d\ude00")")).rule, "");
  for (const char* more : {R"(,"x":"a\udc00")", R"(,"x":{"y":["\udfff"]})", R"(,"x":{"\udc00":1})"}) {
    const EventProblem p = Check(With(more));
    EXPECT_EQ(p.field, "x") << more;
    EXPECT_EQ(p.rule, "holds a string that is not UTF-8 (an escaped unpaired surrogate)") << more;
  }
  EXPECT_EQ(Check(With(R"(,"\udc00":1)")).rule, "holds a string that is not UTF-8 (an escaped unpaired surrogate)");
  EXPECT_EQ(Check(R"({"id":"a:1","event":"e","step":"\udc00","time":1})").field, "step");
}

TEST(EventRules, FieldsHoldWhatTheProtocolsFieldsSaid) {
  EventChecker checker(EventStage::kStamped);
  ASSERT_NE(Copy(R"({"id":"7.0:3","event":"entry","step":"7.batch","time":-1.5,"sweep":"sw-1","entry":-0,)"
                 R"("node":"gpu-1","x":{"id":"no"}})",
                 checker),
            "");
  const EventFields& f = checker.fields();
  EXPECT_EQ(f.id, "7.0:3");
  EXPECT_EQ(f.event, "entry");
  EXPECT_EQ(f.step, "7.batch");
  EXPECT_EQ(f.time, -1.5);
  EXPECT_EQ(f.sweep, "sw-1");
  EXPECT_EQ(f.entry, 0);
  EXPECT_EQ(f.node, "gpu-1");

  EventChecker datagram(EventStage::kDatagram);
  ASSERT_NE(Copy(R"({"id":"7.0:3","event":"entry","step":"7","time":1,"entry":9223372036854775807,"node":"x"})",
                 datagram),
            "");
  EXPECT_EQ(datagram.fields().entry, INT64_MAX);
  EXPECT_FALSE(datagram.fields().node) << "a datagram's node is a claim";
  EXPECT_FALSE(datagram.fields().sweep);
}

TEST(EventRules, TheSizeLimit) {
  EXPECT_TRUE(CheckEventSize(kMaxEventBytes));
  EXPECT_EQ(CheckEventSize(kMaxEventBytes + 1).error().message,
            "is 65537 bytes as compact JSON; at most 65536 are allowed");
}

TEST(Names, SweepIdAndResultNameAlphabet) {
  EXPECT_TRUE(CheckSweepId("sw-20261202-160900-ab12"));
  EXPECT_TRUE(CheckSweepId("..."));  // three dots is a name, not a parent
  EXPECT_TRUE(IsValidSweepId(std::string(64, 's')));
  EXPECT_FALSE(IsValidSweepId(std::string(65, 's')));
  EXPECT_FALSE(CheckSweepId(std::string(65, 's')));
  EXPECT_TRUE(CheckResultName("result.json"));
  EXPECT_TRUE(CheckResultName(".hidden"));
  EXPECT_TRUE(CheckResultName(std::string(255, 'r')));
  EXPECT_TRUE(IsValidResultName(std::string(255, 'r')));
  EXPECT_FALSE(CheckResultName(std::string(256, 'r')));
  EXPECT_FALSE(IsValidResultName(std::string(256, 'r')));
  EXPECT_TRUE(CheckResultName("aiperf_artifacts/profile_export.jsonl")) << "one directory level";
  EXPECT_FALSE(IsValidSweepId("a/b"));
  for (const char* bad : {"a/b/c", "a/", "/a", "a//b", "../x", "a/..", "./a"}) {
    EXPECT_FALSE(IsValidResultName(bad)) << bad;
    EXPECT_FALSE(CheckResultName(bad)) << bad;
  }
  EXPECT_FALSE(IsValidResultName(std::string(200, 'd') + "/" + std::string(55, 'n'))) << "256 bytes in all";
  for (std::string_view bad : {std::string_view(""), std::string_view("."), std::string_view(".."),
                               std::string_view("../x"), std::string_view("a\0b", 3),
                               std::string_view("a b"), std::string_view("a\\b"), std::string_view("é")}) {
    EXPECT_FALSE(CheckResultName(bad)) << bad;
    EXPECT_FALSE(CheckSweepId(bad)) << bad;
    EXPECT_FALSE(IsValidResultName(bad)) << bad;
    EXPECT_FALSE(IsValidSweepId(bad)) << bad;
  }
  EXPECT_EQ(CheckResultName("%2e%2e").error().message,
            "must be NAME or DIR/NAME of at most 255 bytes, each part 1 to 255 characters from A-Z a-z 0-9 . _ -, "
            "not \".\" or \"..\" (percent-encoding is not decoded)");
  EXPECT_EQ(CheckSweepId("a b%").error().message,
            "must be 1 to 64 characters from A-Z a-z 0-9 . _ -, not \".\" or \"..\"");
}

}  // namespace
}  // namespace ix
