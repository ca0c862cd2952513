#pragma once
// A small random MoE layer that owns its buffers, reproducible from a seed: the runner's canary
// runs one, and tests build theirs with it (tests/moe/moe_test_support.hpp).
#include <cstdint>
#include <random>
#include <vector>

#include "fp4gemm/format/nvfp4_matrix.hpp"
#include "fp4gemm/moe/moe_layer.hpp"

namespace fp4gemm::moe {

enum class SharedKind { none, nvfp4, dense };

struct RandomMoeSpec {
  std::int64_t experts = 5, hidden = 64, intermediate = 32;
  ExpertLayout layout = ExpertLayout::separate;
  bool router = true;
  SharedKind shared = SharedKind::none;
  std::int64_t shared_intermediate = 48;
  DType dense_dtype = DType::bf16;  // the router's, the shared gate's and a dense shared expert's
  bool shared_gate = true;
  bool input_scales = true;         // ModelOpt's input_scale on every NVFP4 projection (W4A4)
};

// NOTE: `weights` points into the other members: a RandomMoeLayer may be moved (the vectors'
// buffers move with it) but not copied.
struct RandomMoeLayer {
  RandomMoeLayer() = default;
  RandomMoeLayer(RandomMoeLayer&&) = default;
  RandomMoeLayer& operator=(RandomMoeLayer&&) = default;
  RandomMoeLayer(const RandomMoeLayer&) = delete;
  RandomMoeLayer& operator=(const RandomMoeLayer&) = delete;

  MoeWeights weights;
  std::vector<Nvfp4Matrix> matrices;  // separate layout, and the shared expert
  // The fused layout's one [E, 2I, H] gate_up buffer (codes, linear scales) and [E, H, I] down.
  std::vector<std::uint8_t> gate_up_codes, gate_up_scales, down_codes, down_scales;
  std::vector<std::vector<float>> dense_f32;
  std::vector<std::vector<std::uint16_t>> dense_bf16;
};

RandomMoeLayer make_random_moe_layer(const RandomMoeSpec& spec, std::mt19937_64& rng);

// Hidden states x [tokens, hidden] of O(1) values with a spread of block magnitudes and some
// exact zeros, in BF16 or FP32. `f32` always holds them; `bf16` holds them rounded when asked.
struct RandomHiddenStates {
  std::int64_t tokens = 0, hidden = 0;
  DType dtype = DType::f32;
  std::vector<float> f32;
  std::vector<std::uint16_t> bf16;
  DenseView view() const;
};
RandomHiddenStates make_random_hidden_states(std::int64_t tokens, std::int64_t hidden, DType dtype, std::mt19937_64& rng);

}  // namespace fp4gemm::moe
