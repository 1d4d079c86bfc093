// A fixture shared by the results tests: an aggregated multinode entry as
// the sweep plans it (tests/data/sweep-multinode/master.yaml's dep16 row as
// `ixsubmit matrix` prints it, concurrency 64 of its [32, 64], on an arm of
// 2 nodes x 8 GPUs with a router).
#pragma once

#include "submitter/sweep/sweep_plan.h"

namespace ix::test {

inline PlannedEntry Dep16MultinodeEntry() {
  return PlannedEntry{
      .index = 3, .config_key = "mn-agg", .arm = "dep16", .conc = 64, .gpus = 8, .nodes = 2,
      .router_version = "0.1.14",
      .entry_json =
          R"({"image":"vllm/vllm-openai:nightly","model":"org/model","model-prefix":"mn","precision":"fp4",)"
          R"("framework":"vllm","runner":"b300-mn","isl":1024,"osl":1024,"spec-decoding":"none",)"
          R"("prefill":{"num-worker":1,"tp":16,"ep":16,"dp-attn":true,"pp":1,"dcp-size":1,"pcp-size":1},)"
          R"("decode":{"num-worker":0,"tp":16,"ep":16,"dp-attn":true,"pp":1,"dcp-size":1,"pcp-size":1},)"
          R"("conc":[32,64],"max-model-len":2304,"exp-name":"mn_1k1k","disagg":false,"run-eval":false})"};
}

}  // namespace ix::test
