#include "spank_plugin/step_hang.h"

#include <gtest/gtest.h>

namespace ix {
namespace {

constexpr char kEngineUrl[] = "http://localhost:20001/metrics";
constexpr char kRouterUrl[] = "http://localhost:20002/metrics";

// The shipped recipe's policy for a dep4 step behind the router.
PlannedHang Dep4Policy(double after_s) {
  PlannedHang h;
  h.after_s = after_s;
  h.checks = {HangCheck{"engine", kEngineUrl, {"vllm:num_requests_running"},
                        {"vllm:generation_tokens_total", "vllm:prompt_tokens_total"}, "engine"},
              HangCheck{"router", kRouterUrl, {"vllm_router_running_requests"}, {}, ""}};
  return h;
}

// vLLM's /metrics for two DP ranks: requests running and the two counters.
std::string EngineText(double run0, double gen0, double run1, double gen1) {
  const auto rank = [](int r, double run, double gen) {
    const std::string l = "{engine=\"" + std::to_string(r) + "\",model_name=\"m\"} ";
    return "vllm:num_requests_running" + l + std::to_string(run) + "\nvllm:generation_tokens_total" + l +
           std::to_string(gen) + "\nvllm:prompt_tokens_total" + l + "100\n";
  };
  return "# TYPE vllm:num_requests_running gauge\n" + rank(0, run0, gen0) + rank(1, run1, gen1);
}

struct FakeServers {
  std::optional<std::string> engine, router = std::string("vllm_router_running_requests{worker=\"a\"} 0\n");
  StepHang::Fetch fetch() {
    return [this](const std::string& url) { return url == kEngineUrl ? engine : router; };
  }
};

TEST(StepHang, OneStalledRankIsFoundWithItsCountersWhileTheOtherServes) {
  StepHang hang(Dep4Policy(10));
  FakeServers s;
  for (int t = 0; t <= 9; ++t) {
    s.engine = EngineText(3, 100 + 10 * t, 2, 500);  // rank 1: busy, frozen
    EXPECT_FALSE(hang.Poll(t, s.fetch())) << t;
  }
  s.engine = EngineText(3, 200, 2, 500);
  std::optional<HangFinding> f = hang.Poll(10, s.fetch());
  ASSERT_TRUE(f);
  EXPECT_EQ(f->process, "engine");
  EXPECT_EQ(f->label, "engine");
  EXPECT_EQ(f->label_value, "1");
  EXPECT_DOUBLE_EQ(f->stalled_s, 10);
  EXPECT_EQ(f->Describe(),
            "engine (engine=1): 2 busy and no progress for 10 s (vllm:generation_tokens_total 500, "
            "vllm:prompt_tokens_total 100)");
  EXPECT_EQ(f->Json(),
            "{\"process\":\"engine\",\"label\":\"engine\",\"label_value\":\"1\",\"stalled_s\":10,\"answered\":true,"
            "\"busy\":2,\"counters\":{\"vllm:generation_tokens_total\":500,\"vllm:prompt_tokens_total\":100}}");
  EXPECT_FALSE(hang.Poll(11, s.fetch())) << "reported once";
}

TEST(StepHang, AnIdleEngineNeverHangsAndProgressRestartsTheClock) {
  StepHang hang(Dep4Policy(5));
  FakeServers s;
  for (int t = 0; t < 30; ++t) {
    s.engine = EngineText(0, 100, 0, 100);
    EXPECT_FALSE(hang.Poll(t, s.fetch()));
  }
  for (int t = 30; t < 60; ++t) {
    s.engine = EngineText(4, 100 + (t % 4 == 0 ? t : 0), 0, 100);  // a token every 4 s
    EXPECT_FALSE(hang.Poll(t, s.fetch())) << t;
  }
}

TEST(StepHang, AnEngineThatStopsAnsweringIsHungAfterTheSameTime) {
  StepHang hang(Dep4Policy(5));
  FakeServers s;
  s.engine = EngineText(2, 10, 2, 10);
  EXPECT_FALSE(hang.Poll(0, s.fetch()));
  s.engine.reset();  // SIGSTOP: alive, no answer
  for (int t = 1; t < 5; ++t) EXPECT_FALSE(hang.Poll(t, s.fetch())) << t;
  std::optional<HangFinding> f = hang.Poll(5, s.fetch());  // no progress since the answer at 0
  ASSERT_TRUE(f);
  EXPECT_FALSE(f->answered);
  EXPECT_NE(f->Describe().find("no answer for 5 s while its process lives"), std::string::npos) << f->Describe();
}

TEST(StepHang, RequestsHeldAtTheRouterWhileNoEngineProgressesAreAHang) {
  StepHang hang(Dep4Policy(5));
  FakeServers s;
  s.engine = EngineText(0, 10, 0, 10);  // nothing reaches the engines
  s.router = "vllm_router_running_requests{worker=\"http://a\"} 3\n";
  for (int t = 0; t < 5; ++t) EXPECT_FALSE(hang.Poll(t, s.fetch())) << t;
  std::optional<HangFinding> f = hang.Poll(5, s.fetch());
  ASSERT_TRUE(f);
  EXPECT_EQ(f->process, "router");
  EXPECT_EQ(f->counters.size(), 2u);  // the engines' counters, summed
  // Engines making progress: requests at the router are just queued.
  StepHang moving(Dep4Policy(5));
  for (int t = 0; t < 20; ++t) {
    s.engine = EngineText(1, 10 + t, 0, 10);
    EXPECT_FALSE(moving.Poll(t, s.fetch())) << t;
  }
}

}  // namespace
}  // namespace ix
