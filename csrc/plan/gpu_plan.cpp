// GPU planner (CUDA and HIP). Owned by the GPU engine; see transpose_plan.h for the contract.
#include <algorithm>

#include "plan/transpose_plan.h"

namespace torch_inplace {
namespace plan {

std::vector<Plan> gpu_candidates(const Problem& p, const DeviceCaps& caps, Algo forced) {
  (void)caps;
  std::vector<Plan> out;
  auto want = [&](Algo a) { return forced == Algo::Auto || forced == a; };
  auto make = [&](Algo a, const char* why) {
    Plan plan;
    plan.algo = a;
    plan.problem = p;
    plan.reason = why;
    const bool r2c = a == Algo::R2C;
    plan.c2r = c2r::Params(r2c ? p.cols : p.rows, r2c ? p.rows : p.cols);
    return plan;
  };
  if (want(Algo::Square) && p.rows == p.cols) out.push_back(make(Algo::Square, "rows == cols: tile-pair swaps"));
  const bool tall = p.rows > p.cols;
  if (want(tall ? Algo::C2R : Algo::R2C)) out.push_back(make(tall ? Algo::C2R : Algo::R2C, "Catanzaro"));
  if (want(tall ? Algo::R2C : Algo::C2R)) out.push_back(make(tall ? Algo::R2C : Algo::C2R, "Catanzaro (other)"));
  return out;
}

int64_t padding_slack_bytes(const Problem& p) {
  (void)p;
  return 0;
}

}  // namespace plan
}  // namespace torch_inplace
