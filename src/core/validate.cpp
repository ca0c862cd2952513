// Argument checks shared by every backend; they run before anything is written.
#include <string>

#include "core/dense_checks.hpp"
#include "fp4gemm/backend.hpp"
#include "fp4gemm/error.hpp"
#include "fp4gemm/format/nvfp4_matrix.hpp"

namespace fp4gemm {

// Appended piece by piece: GCC 12 reports a false -Wrestrict on `"[" + std::to_string(...)`.
std::string shape_text(std::int64_t rows, std::int64_t cols) {
  std::string text = "[";
  text += std::to_string(rows);
  text += ", ";
  text += std::to_string(cols);
  text += "]";
  return text;
}

void check_dense(const DenseView& view, const char* what) {
  if (view.rows < 0 || view.cols < 0) throw_invalid(std::string(what) + ": negative dimensions " + shape_text(view.rows, view.cols));
  if (view.stride() < view.cols) throw_invalid(std::string(what) + ": row stride " + std::to_string(view.stride()) + " < cols " + std::to_string(view.cols));
  if (view.rows * view.cols > 0 && view.data == nullptr) throw_invalid(std::string(what) + ": null data pointer");
  if (view.size_bytes > 0 && view.required_bytes() > view.size_bytes) {
    throw_invalid(std::string(what) + ": the buffer holds " + std::to_string(view.size_bytes) + " bytes but " +
                  shape_text(view.rows, view.cols) + " with row stride " + std::to_string(view.stride()) + " needs " +
                  std::to_string(view.required_bytes()));
  }
}

void validate_weight(const Nvfp4View& weight) { validate_nvfp4(weight, "weight"); }

GemmProblem validate_gemm(const ActivationView& a, const PreparedWeight& weight,
                          const MutableDenseView& out, Memory expected_memory) {
  GemmProblem problem;
  problem.m = a.rows();
  problem.n = weight.rows;
  problem.k = weight.cols;
  problem.activation = a.type;
  problem.output = out.dtype;

  if (a.type == ActivationType::nvfp4) {
    validate_nvfp4(a.nvfp4, "activation");
  } else {
    check_dense(a.dense, "activation");
    if (a.dense.dtype == DType::f16) throw_invalid("activation: f16 activations are not supported; pass bf16 or f32");
  }
  check_dense(out.as_const(), "output");

  if (problem.k % 16 != 0) throw_invalid("K = " + std::to_string(problem.k) + " is not a multiple of 16, the NVFP4 block size");
  if (a.cols() != problem.k) {
    throw_invalid("activation is " + shape_text(a.rows(), a.cols()) + " but the weight is " + shape_text(problem.n, problem.k) +
                  ": activation cols must equal weight cols (K)");
  }
  if (out.rows != problem.m || out.cols != problem.n) {
    throw_invalid("output is " + shape_text(out.rows, out.cols) + " but the product is " + shape_text(problem.m, problem.n) +
                  " (activation rows x weight rows)");
  }
  if (a.memory() != expected_memory) {
    throw_invalid(std::string("activation lives in ") + to_string(a.memory()) + " memory; backend '" + weight.backend +
                  "' needs " + to_string(expected_memory) + " memory");
  }
  if (out.memory != expected_memory) {
    throw_invalid(std::string("output lives in ") + to_string(out.memory) + " memory; backend '" + weight.backend +
                  "' needs " + to_string(expected_memory) + " memory");
  }
  return problem;
}

}  // namespace fp4gemm
