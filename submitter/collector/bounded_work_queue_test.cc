#include "submitter/collector/bounded_work_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <set>

#include "tests/support/test.h"

namespace ix {
namespace {

using namespace std::chrono_literals;

TEST(BoundedWorkQueue, RunsEveryTaskOnItsWorkers) {
  std::atomic<int> ran{0};
  std::mutex mu;
  std::set<std::thread::id> threads;
  {
    BoundedWorkQueue q(3, 100);
    for (int i = 0; i < 50; ++i) {
      q.Enqueue([&] {
        ++ran;
        std::lock_guard<std::mutex> lock(mu);
        threads.insert(std::this_thread::get_id());
      });
    }
    q.Shutdown();
    EXPECT_EQ(ran.load(), 50) << "Shutdown runs what was queued";
  }
  EXPECT_LE(threads.size(), 3u);
  EXPECT_EQ(threads.count(std::this_thread::get_id()), 0u);
}

TEST(BoundedWorkQueue, EnqueueWaitsForRoomUntilReleased) {
  BoundedWorkQueue q(1, 1);
  std::promise<void> gate;
  std::shared_future<void> open = gate.get_future().share();
  std::atomic<bool> running{false};
  q.Enqueue([&] {
    running = true;
    open.wait();
  });
  ASSERT_TRUE(test::WaitUntil([&] { return running.load(); }, 10s));
  q.Enqueue([] {});  // fills the queue
  std::atomic<bool> third_returned{false};
  std::thread::id third_ran_on;
  std::thread producer([&] {
    q.Enqueue([&] { third_ran_on = std::this_thread::get_id(); });
    third_returned = true;
  });
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(third_returned.load()) << "a full queue makes the producer wait";
  q.Release();
  ASSERT_TRUE(test::WaitUntil([&] { return third_returned.load(); }, 10s));
  const std::thread::id producer_id = producer.get_id();
  producer.join();
  EXPECT_EQ(third_ran_on, producer_id) << "released: the task ran on the producer's thread";
  gate.set_value();
  q.Shutdown();
}

TEST(BoundedWorkQueue, AfterShutdownTasksRunOnTheCaller) {
  BoundedWorkQueue q(2, 2);
  q.Shutdown();
  q.Shutdown();  // twice is fine
  bool ran = false;
  q.Enqueue([&] { ran = true; });
  EXPECT_TRUE(ran);
}

}  // namespace
}  // namespace ix
