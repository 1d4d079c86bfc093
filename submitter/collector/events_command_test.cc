#include "submitter/collector/events_command.h"

#include <gtest/gtest.h>

namespace ix {
namespace {

StoredEvent Event(const std::string& id, const std::string& body) {
  StoredEvent e;
  e.id = id;
  e.step = "12.0";
  e.event = "ready";
  e.time = 1764691740.5;
  e.body = body;
  return e;
}

TEST(EventsOutput, JsonIsAnArrayOfTheStoredBodies) {
  EXPECT_EQ(EventsJson({}), "[]\n");
  EXPECT_EQ(EventsJson({Event("12.0:1", R"({"a":1})"), Event("12.0:2", R"({"b":[2]})")}),
            "[\n{\"a\":1},\n{\"b\":[2]}\n]\n");
}

TEST(EventsOutput, TableHasTimeNodeStepEventId) {
  StoredEvent e = Event("12.0:1", "{}");
  e.node = "gpu\x01node";
  const std::string t = EventsTable({e, Event("12.0:2", "{}")});
  EXPECT_EQ(t.substr(0, t.find('\n')).find("TIME"), 0u);
  EXPECT_NE(t.find("2025-12-02T16:09:00.500Z gpu\\x01node"), std::string::npos) << t;
  EXPECT_NE(t.find(" - "), std::string::npos) << "no node: a dash\n" << t;
  EXPECT_NE(t.find("12.0:2\n"), std::string::npos) << t;
}

TEST(EventsOutput, UtcTimes) {
  EXPECT_EQ(UtcTimeText(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(UtcTimeText(1.9996), "1970-01-01T00:00:02.000Z");
  EXPECT_EQ(UtcTimeText(86400.25), "1970-01-02T00:00:00.250Z");
}

TEST(EventsOutput, Results) {
  StoredResultInfo r{"sw-1", 3, "result.json", std::string(64, 'a'), 12, 5};
  EXPECT_NE(ResultsTable({r}).find("sw-1"), std::string::npos);
  EXPECT_NE(ResultsJson({r}).find("\"name\": \"result.json\""), std::string::npos) << ResultsJson({r});
  EXPECT_EQ(ResultsJson({}), "[]\n");
}

}  // namespace
}  // namespace ix
