// `import torch_inplace._C` loads the shared library, whose static TORCH_LIBRARY registrars define the ops.
// No Python bindings live here: every entry point is a torch op (torch.ops.inplace.*).
#include <Python.h>

extern "C" {
PyMODINIT_FUNC PyInit__C(void) {
  static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_C", nullptr, -1, nullptr};
  return PyModule_Create(&module_def);
}
}
