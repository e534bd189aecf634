// Meta (and fake-tensor) implementation of the data-only op: it moves bytes and changes no metadata.
#include <ATen/core/Tensor.h>
#include <torch/library.h>

#include "core/checks.h"

namespace torch_inplace {
namespace {
void transpose_data_meta(at::Tensor& self, c10::string_view algorithm) {
  check_transposable(self, "transpose_", CheckLevel::kMemory);
  parse_algorithm(std::string(algorithm), "transpose_");
}
}  // namespace

TORCH_LIBRARY_IMPL(inplace, Meta, m) { m.impl("_transpose_data_", &transpose_data_meta); }

}  // namespace torch_inplace
