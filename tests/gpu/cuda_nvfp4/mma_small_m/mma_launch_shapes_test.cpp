// `cuda_nvfp4`'s mma.sync kernel at every compiled CTA shape and tiles per warp, not only the ones choose_launch_shape picks for the
// other tests' problems: each shape is forced through FP4GEMM_DECODE_SHAPE and checked against the
// CPU `ref` oracle on fresh random inputs, at sizes that leave partial CTAs (N not a multiple of
// the CTA's rows), partial chunks (K % 64 != 0), K splits that do not divide the chunk count, and
// warps with fewer chunks than the register ring holds. Without a GPU every test skips.
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <utility>

#include "backends/cuda_nvfp4/mma_small_m/sm80_nvfp4_mma_gemm.cuh"
#include "fp4gemm/registry.hpp"
#include "gpu/gpu_test_support.hpp"

namespace fp4gemm::testing {
namespace {

constexpr double kRelativeTolerance = 1e-4;  // as in cuda_backend_correctness_test.cpp

TEST(CudaNvfp4LaunchShapes, EveryCompiledShapeMatchesTheReference) {
  const auto gpu = first_gpu();
  if (!gpu) GTEST_SKIP() << "no GPU: " << cuda_unavailable_reason();
  auto backend = make_backend("cuda_nvfp4");
  const CheckResult usable = backend->check_device(*gpu);
  if (!usable) GTEST_SKIP() << "cuda_nvfp4 cannot run on " << gpu->to_string() << ": " << usable.reason;
  TestStream stream;
  int shapes_run = 0, bounded_shapes_run = 0, clustered_shapes_run = 0;
  for (int tiles_per_warp : {1, 2}) {
    for (int warps_n : {1, 2, 4, 8}) {
      for (int warps_k : {1, 2, 4, 5, 8, 12, 16, 24}) {  // 5, 12, 16, 24: the paired-fill and wide K splits
        for (std::int64_t m : {1, 3, 9, 16, 17, 24, 25, 32, 64}) {
          // The register-bounded form (four tiles) and K split over clusters of 2-8 CTAs (one and two tiles).
          using Form = std::pair<bool, int>;  // (register_bounded, cluster_k)
          for (const auto& [bounded, cluster_k] : {Form{false, 1}, Form{true, 1}, Form{false, 2}, Form{false, 4}, Form{false, 8}}) {
            const cuda_nvfp4::LaunchShape shape{cuda_nvfp4::activation_tiles(m), warps_n, warps_k, tiles_per_warp, bounded, cluster_k};
            if (!cuda_nvfp4::is_compiled_shape(shape)) continue;
            const std::string name = std::to_string(warps_n) + ":" + std::to_string(warps_k) + ":" + std::to_string(tiles_per_warp) +
                                     ":" + std::to_string(int(bounded)) + ":" + std::to_string(cluster_k);
            const ScopedEnv forced("FP4GEMM_DECODE_SHAPE", name);
            // 37 and 300 rows: partial CTAs (37 is 3 tiles: a warp's second tile past N); K = 16, 80,
            // 1040: partial chunks; 4160 = 65 chunks, which no split divides; 16 and 80 leave most
            // warps of an 8-way split without a chunk.
            for (std::int64_t n : {37, 300}) {
              for (std::int64_t k : {16, 80, 1040, 4160}) {
                const GemmCase c{m, n, k, ActivationType::bf16, DType::f32};
                const std::uint64_t seed = fresh_seed();
                std::mt19937_64 rng(seed);
                const GemmOperands operands = make_operands(c, rng);
                const auto prepared = backend->prepare(operands.weight.view(), *gpu);
                const DeviceActivation activation = upload_activation(operands, gpu->index);
                DeviceOutput out(m, n, c.output, gpu->index);
                backend->run(activation.view, *prepared, operands.alpha, out.view(), {stream.get()});
                stream.synchronize();
                out.download();
                const std::string context = "shape " + name + " " + c.to_string() + " seed " + std::to_string(seed);
                const std::string failures = compare_with_reference(operands, out.values(), m, n, c.output, kRelativeTolerance);
                ASSERT_TRUE(failures.empty()) << context << "\n" << failures;
                ASSERT_TRUE(out.only_elements_written()) << context << ": wrote outside the output";
              }
            }
            ++shapes_run;
            if (bounded) ++bounded_shapes_run;
            if (cluster_k > 1) ++clustered_shapes_run;
          }
        }
      }
    }
  }
  // Every entry of FP4GEMM_DECODE_SHAPES (sm80_nvfp4_mma_gemm.cu) at each M of its activation tiles:
  // 45 shapes, 43 at two values of M and the two 8-tile ones at one.
  EXPECT_EQ(shapes_run, 88) << "a compiled shape the loops above do not reach, or one fewer";
  EXPECT_EQ(bounded_shapes_run, 8) << "the four register-bounded shapes at M = 25 and 32";
  EXPECT_EQ(clustered_shapes_run, 12) << "the six clustered shapes at M = 1 and 3 or 9 and 16";
}

// M = 1 on 28672x8192 runs 896 CTAs of 1x4 warps with two weight tiles each; on the H200's 132 SMs
// they fit one wave only at 7 CTAs per SM, i.e. at most 72 registers. A change that took the kernel
// to 80 registers ran that problem 43 us instead of 33 (sm80_nvfp4_mma_tuning.hpp, min_resident_warps), so
// this guards the register count of the build.
TEST(CudaNvfp4LaunchShapes, OneTokenShapeOfTheLargestIssueWeightKeepsSevenCtasPerSm) {
  const auto gpu = first_gpu();
  if (!gpu) GTEST_SKIP() << "no GPU: " << cuda_unavailable_reason();
  if (gpu->sm() != 90) GTEST_SKIP() << "the occupancy was measured on SM 9.0, not " << gpu->to_string();
  const cuda_nvfp4::LaunchShape shape = cuda_nvfp4::choose_launch_shape(1, 28672, 8192, gpu->multiprocessors, true);
  ASSERT_EQ(shape.tiles_per_warp, 2);
  ASSERT_EQ(shape.warps_n * shape.warps_k, 4);
  EXPECT_GE(cuda_nvfp4::decode_gemm_resident_ctas_per_sm(shape), 7);
}

// The three-tile kernel (M = 17-24) exists for its occupancy: 126-127 registers, so two 8-warp CTAs
// per SM where the unbounded four-tile kernel (138) holds one, and 4096-row weights keep their 1x8 grid in one
// wave (sm80_nvfp4_mma_tuning.hpp, activation_tiles). This guards the register count of the build.
TEST(CudaNvfp4LaunchShapes, ThreeActivationTilesKeepTwoEightWarpCtasPerSm) {
  const auto gpu = first_gpu();
  if (!gpu) GTEST_SKIP() << "no GPU: " << cuda_unavailable_reason();
  if (gpu->sm() != 90) GTEST_SKIP() << "the occupancy was measured on SM 9.0, not " << gpu->to_string();
  const cuda_nvfp4::LaunchShape shape = cuda_nvfp4::choose_launch_shape(24, 4096, 4096, gpu->multiprocessors, true);
  ASSERT_EQ(shape.m_tiles, 3);
  ASSERT_EQ(shape.warps_n * shape.warps_k, 8);
  EXPECT_GE(cuda_nvfp4::decode_gemm_resident_ctas_per_sm(shape), 2);
  EXPECT_GE(cuda_nvfp4::decode_gemm_resident_ctas_per_sm(cuda_nvfp4::LaunchShape{3, 1, 4, 1}), 4);
}

// The register-bounded four-tile kernel (M = 25-32) exists for its occupancy: two 8-warp or four
// 4-warp CTAs per SM where the unbounded one holds one or three (sm80_nvfp4_mma_tuning.hpp,
// kRegisterBoundedWarpsPerSm), and the launcher takes it for 4096x12288 at M = 32 (measured 20.7 ->
// 18.2 us). This guards the register counts of the build and that choice.
TEST(CudaNvfp4LaunchShapes, TheRegisterBoundedFourTileKernelKeepsSixteenWarpsPerSm) {
  const auto gpu = first_gpu();
  if (!gpu) GTEST_SKIP() << "no GPU: " << cuda_unavailable_reason();
  if (gpu->sm() != 90 || gpu->multiprocessors != 132) GTEST_SKIP() << "the occupancy was measured on a 132-SM H200, not " << gpu->to_string();
  EXPECT_EQ(cuda_nvfp4::decode_gemm_resident_ctas_per_sm(cuda_nvfp4::LaunchShape{4, 1, 8, 1, true}), 2);
  EXPECT_EQ(cuda_nvfp4::decode_gemm_resident_ctas_per_sm(cuda_nvfp4::LaunchShape{4, 1, 4, 1, true}), 4);
  EXPECT_EQ(cuda_nvfp4::decode_gemm_resident_ctas_per_sm(cuda_nvfp4::LaunchShape{4, 1, 8, 1, false}), 1);
  // 5120x12288: the bounded 1x8 grid takes 1.21 waves, its half-K 1x4 fits one (4096 rows take
  // tile pairs: TilePairsOfThreeAndFourActivationTiles...).
  const cuda_nvfp4::LaunchShape shape =
      cuda_nvfp4::choose_launch_shape(32, 5120, 12288, gpu->multiprocessors, true, cuda_nvfp4::decode_gemm_resident_ctas_per_sm);
  EXPECT_TRUE(shape.register_bounded);
  EXPECT_EQ(shape.warps_n * shape.warps_k, 4);
}

// The tile pairs of three and four activation tiles hold 12 and 8 warps per SM on the H200 (159-171
// registers), which sm80_nvfp4_mma_tuning.hpp's pair rule was measured at: 4096x12288 at M = 32 takes 1x8x2
// (7.8 warps per SM, 18.4 -> 16.6 us) and 12288x4096 at M = 24 1x4x2 (11.6, 16.1 -> 12.1 us).
TEST(CudaNvfp4LaunchShapes, TilePairsOfThreeAndFourActivationTilesKeepTheirMeasuredOccupancy) {
  const auto gpu = first_gpu();
  if (!gpu) GTEST_SKIP() << "no GPU: " << cuda_unavailable_reason();
  if (gpu->sm() != 90 || gpu->multiprocessors != 132) GTEST_SKIP() << "the occupancy was measured on a 132-SM H200, not " << gpu->to_string();
  EXPECT_EQ(cuda_nvfp4::decode_gemm_resident_ctas_per_sm(cuda_nvfp4::LaunchShape{4, 1, 8, 2, false}), 1);
  EXPECT_EQ(cuda_nvfp4::decode_gemm_resident_ctas_per_sm(cuda_nvfp4::LaunchShape{4, 1, 4, 2, false}), 2);
  EXPECT_EQ(cuda_nvfp4::decode_gemm_resident_ctas_per_sm(cuda_nvfp4::LaunchShape{3, 1, 4, 2, false}), 3);
  const auto chosen = [&](std::int64_t m, std::int64_t n, std::int64_t k) {
    const cuda_nvfp4::LaunchShape shape =
        cuda_nvfp4::choose_launch_shape(m, n, k, gpu->multiprocessors, true, cuda_nvfp4::decode_gemm_resident_ctas_per_sm);
    return std::array<int, 3>{shape.warps_n, shape.warps_k, shape.tiles_per_warp};
  };
  EXPECT_EQ(chosen(32, 4096, 12288), (std::array<int, 3>{1, 8, 2}));
  EXPECT_EQ(chosen(24, 12288, 4096), (std::array<int, 3>{1, 4, 2}));
}

// The launcher weighs the grid's waves with the compiled kernels' real occupancy: on the H200,
// 8192x8192 at M = 1 leaves the size rule's 512 CTAs of 1x8 warps (1.29 waves of 3 per SM) for
// tile pairs (sm80_nvfp4_mma_tuning.hpp, kMaxTailWaves), which measured 14.3 -> 12.2 us.
TEST(CudaNvfp4LaunchShapes, TheLaunchersOccupancyMovesAGridOfAPartialSecondWaveToOneWave) {
  const auto gpu = first_gpu();
  if (!gpu) GTEST_SKIP() << "no GPU: " << cuda_unavailable_reason();
  if (gpu->sm() != 90 || gpu->multiprocessors != 132) GTEST_SKIP() << "the waves were measured on a 132-SM H200, not " << gpu->to_string();
  const cuda_nvfp4::LaunchShape rule = cuda_nvfp4::choose_launch_shape(1, 8192, 8192, gpu->multiprocessors, true);
  ASSERT_EQ(cuda_nvfp4::decode_gemm_resident_ctas_per_sm(rule), 3);
  const cuda_nvfp4::LaunchShape shape =
      cuda_nvfp4::choose_launch_shape(1, 8192, 8192, gpu->multiprocessors, true, cuda_nvfp4::decode_gemm_resident_ctas_per_sm);
  EXPECT_EQ(shape.tiles_per_warp, 2);
  EXPECT_EQ(shape.warps_k, rule.warps_k);
  EXPECT_LE(cuda_nvfp4::grid_ctas(shape, 8192),
            std::int64_t(cuda_nvfp4::decode_gemm_resident_ctas_per_sm(shape)) * gpu->multiprocessors);  // one wave
}

TEST(CudaNvfp4LaunchShapes, AShapeThisBuildDoesNotCompileIsAClearError) {
  const auto gpu = first_gpu();
  if (!gpu) GTEST_SKIP() << "no GPU: " << cuda_unavailable_reason();
  auto backend = make_backend("cuda_nvfp4");
  if (!backend->check_device(*gpu)) GTEST_SKIP() << "cuda_nvfp4 cannot run on " << gpu->to_string();
  TestStream stream;
  const ScopedEnv forced("FP4GEMM_DECODE_SHAPE", "3:3");
  const RefusedRun run = run_expecting_refusal(*backend, *gpu, {1, 64, 64, ActivationType::bf16, DType::f32}, stream);
  EXPECT_TRUE(run.threw);
  EXPECT_TRUE(run.output_untouched);
}

}  // namespace
}  // namespace fp4gemm::testing
