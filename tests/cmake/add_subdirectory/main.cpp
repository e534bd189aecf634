// Transposes a 2 x 3 tensor in place through the library built by add_subdirectory(); exits 0 when it is right.
#include <torch/torch.h>
#include <torch_inplace.h>

int main() {
  at::Tensor t = torch::arange(6, torch::kFloat).reshape({2, 3});
  const at::Tensor expected = t.t().contiguous();
  torch_inplace::transpose_(t);
  return t.equal(expected) ? 0 : 1;
}
