// The names recipes and launch plans use for their enums: apart from
// recipe.cc, so that reading a plan (ix-stepd) links no recipe parser.
#include "core/recipe/recipe.h"

namespace ix {

const char* PerName(HostMemoryNeed::Per per) {
  switch (per) {
    case HostMemoryNeed::Per::kDpRank: return "dp_rank";
    case HostMemoryNeed::Per::kGpu: return "gpu";
    case HostMemoryNeed::Per::kStep: return "step";
  }
  return "step";
}

const char* DpLayoutName(DpLayout layout) {
  return layout == DpLayout::kEngine ? "engine" : "rank-process";
}

}  // namespace ix
