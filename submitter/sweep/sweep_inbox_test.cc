#include "submitter/sweep/sweep_inbox.h"

#include <gtest/gtest.h>

#include <thread>

namespace ix {
namespace {

const std::string kSweep = "sw-20260101-000000-0001";

std::optional<StreamItem> Item(const std::string& event, const std::string& body, std::optional<int64_t> entry = 3,
                               std::optional<std::string> sweep = kSweep) {
  return StreamItemOfEvent(event, sweep, entry, 12.5, body, kSweep);
}

TEST(StreamItemOfEvent, TheTasksWordOnItsEntry) {
  const auto running = Item("entry", R"({"state":"running","sender":{"pid":1}})");
  ASSERT_TRUE(running);
  EXPECT_EQ(running->kind, StreamItem::Kind::kEntry);
  EXPECT_EQ(running->entry, 3);
  EXPECT_EQ(running->time, 12.5);
  EXPECT_EQ(running->state, "running");
  EXPECT_FALSE(running->exit_code);
  const auto failed = Item("entry", R"({"state":"failed","exit_code":1,"reason":"engine died","process":"engine0"})");
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->state, "failed");
  EXPECT_EQ(failed->exit_code, 1);
  EXPECT_EQ(failed->reason, "engine died");
  EXPECT_EQ(failed->process, "engine0");
}

TEST(StreamItemOfEvent, AStepsFailureAndAnAnnouncedResult) {
  const auto f = Item("failure", R"({"failure":{"process":"router","pid":7,"reason":"exited with 1","log_tail":""}})");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->kind, StreamItem::Kind::kFailure);
  EXPECT_EQ(f->reason, "exited with 1");
  EXPECT_EQ(f->process, "router");
  const auto r = Item("result", R"({"name":"result.json"})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->kind, StreamItem::Kind::kResultNamed);
  EXPECT_EQ(r->name, "result.json");
}

TEST(StreamItemOfEvent, OtherSweepsEventsAndMalformedOnesAreNotTheDrivers) {
  EXPECT_FALSE(Item("entry", R"({"state":"running"})", 3, "sw-other"));
  EXPECT_FALSE(Item("entry", R"({"state":"running"})", 3, std::nullopt));
  EXPECT_FALSE(Item("entry", R"({"state":"running"})", std::nullopt));
  EXPECT_FALSE(Item("ready", R"({})"));
  EXPECT_FALSE(Item("telemetry", R"({"gpus":[0]})"));
  EXPECT_FALSE(Item("entry", R"({"state":"sleeping"})"));
  EXPECT_FALSE(Item("entry", R"({"state":"failed","exit_code":"1"})"));
  EXPECT_FALSE(Item("entry", R"({"state":7})"));
  EXPECT_FALSE(Item("failure", R"({"failure":"text"})"));
  EXPECT_FALSE(Item("result", R"({})"));
  EXPECT_FALSE(Item("result", R"({"name":""})"));
  EXPECT_FALSE(Item("entry", R"(not json)"));
}

TEST(SweepInbox, DrainsInOrderAndWakesAWaiter) {
  SweepInbox box;
  EXPECT_FALSE(box.WaitFor(std::chrono::milliseconds(1)));
  std::thread pusher([&] {
    for (int i = 0; i < 3; ++i) {
      StreamItem item;
      item.entry = i;
      box.Push(item);
    }
  });
  EXPECT_TRUE(box.WaitFor(std::chrono::seconds(30)));
  pusher.join();
  const std::vector<StreamItem> items = box.Drain();
  ASSERT_EQ(items.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(items[static_cast<size_t>(i)].entry, i);
  EXPECT_TRUE(box.Drain().empty());
}

}  // namespace
}  // namespace ix
