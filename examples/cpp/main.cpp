// torch_inplace from C++: runs a TorchScript module that calls torch.ops.inplace.* (saved by make_module.py)
// and compares its outputs with the expected ones saved alongside, then calls torch_inplace::transpose_
// directly. Exits non-zero on any mismatch.
//
//   torch_inplace_example inplace_module.pt
#include <torch/script.h>
#include <torch_inplace.h>

#include <iostream>
#include <string>
#include <vector>

namespace {

bool close(const at::Tensor& got, const at::Tensor& want) {
  if (got.sizes() != want.sizes() || got.scalar_type() != want.scalar_type()) return false;
  if (at::isFloatingType(want.scalar_type()) || at::isComplexType(want.scalar_type()))
    return at::allclose(got, want, /*rtol=*/1e-6, /*atol=*/1e-8);
  return at::equal(got, want);
}

int run_module(const std::string& path) {
  torch::jit::Module module = torch::jit::load(path);
  const auto names = module.attr("names").toListRef();
  const c10::List<at::Tensor> inputs = module.attr("inputs").toTensorList();
  const c10::List<at::Tensor> expected = module.attr("expected").toTensorList();
  const c10::List<at::Tensor> outputs = module.forward({inputs}).toTensorList();
  if (outputs.size() != expected.size() || names.size() != expected.size()) {
    std::cerr << "module returned " << outputs.size() << " outputs, expected " << expected.size() << "\n";
    return 1;
  }
  int bad = 0;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string name = names[i].toStringRef();
    const at::Tensor got = outputs.get(i), want = expected.get(i);
    const bool ok = close(got, want);
    std::cout << "[module] " << name << ": input " << inputs.get(i).sizes() << " -> output " << got.sizes() << " "
              << (ok ? "OK" : "MISMATCH") << "\n";
    if (name == "transpose_") std::cout << got << "\n";
    if (!ok) {
      std::cerr << name << ": expected\n" << want << "\ngot\n" << got << "\n";
      ++bad;
    }
  }
  return bad;
}

int run_direct() {
  at::Tensor t = at::arange(6, at::kFloat).reshape({2, 3}).clone();
  const at::Tensor want = t.t().contiguous();
  const void* ptr = t.data_ptr();
  torch_inplace::transpose_(t);
  const bool ok = t.sizes() == want.sizes() && t.data_ptr() == ptr && t.is_contiguous() && at::equal(t, want);
  std::cout << "[direct] torch_inplace::transpose_ on a 2 x 3 tensor (same storage: "
            << (t.data_ptr() == ptr ? "yes" : "no") << ") " << (ok ? "OK" : "MISMATCH") << "\n"
            << t << "\n";
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: " << argv[0] << " <module.pt saved by make_module.py>\n";
    return 2;
  }
  try {
    const int bad = run_module(argv[1]) + run_direct();
    std::cout << (bad == 0 ? "all outputs match" : "MISMATCHES: " + std::to_string(bad)) << "\n";
    return bad == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
