// fp4gemm._C: the extension's _C.so is also a Python module whose gemm, gemm_out and moe call the
// very functions that torch.ops.fp4gemm registers (forward_ops.hpp), going around the dispatcher.
// Why: at M = 1 the op's own body costs the host well under a microsecond, but torch.ops' Python
// path (matching the call against the schema, boxing the arguments, dispatching) costs microseconds
// per call, more than issue 41's budget for the whole Python path; pybind11's typed arguments
// cost a fraction of that (docs/PYTHON.md has the measurements).
//
// NOTE: they are for eager calls on plain tensors only. They are invisible to torch.compile, to
// tensor subclasses (FakeTensor, FunctionalTensor), to dispatch modes and to autograd, so
// fp4gemm.torch calls the ops whenever one of those is in play (fp4gemm/_library.py: use_direct).
// Like the ops, they release the GIL while the body runs, run on the caller's current CUDA stream
// (the bodies read it) and so are captured by CUDA graphs, and a library error reaches Python as a
// RuntimeError carrying its sentence (pybind11 raises RuntimeError for a std::runtime_error).
#include <torch/csrc/utils/pybind.h>

#include "forward_ops.hpp"

namespace py = pybind11;
using namespace pybind11::literals;

PYBIND11_MODULE(_C, module) {
  namespace ops = fp4gemm::torch_ops;
  module.doc() = "Direct eager bindings of torch.ops.fp4gemm's gemm, gemm_out and moe (same arguments, same code)";
  const auto without_gil = py::call_guard<py::gil_scoped_release>();
  module.def("gemm", &ops::gemm, "activation"_a, "weight"_a, "weight_id"_a, "alpha"_a, "out_dtype"_a = py::none(),
             "backend"_a = "auto", without_gil);
  module.def("gemm_out", &ops::gemm_out, "activation"_a, "weight"_a, "weight_id"_a, "alpha"_a, "out"_a,
             "backend"_a = "auto", without_gil);
  module.def("moe", &ops::moe, "x"_a, "layer_id"_a, "topk_ids"_a = py::none(), "topk_weights"_a = py::none(),
             "top_k"_a = 0, "norm_topk_prob"_a = true, "out_dtype"_a = py::none(), "backend"_a = "auto",
             "activation"_a = "auto", without_gil);
}
