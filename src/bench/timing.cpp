#include <algorithm>
#include <chrono>
#include <random>

#include "bench/bench.hpp"

namespace fp4gemm::bench {

double roofline_us(const GemmProblem& problem, const Ceilings& ceilings) {
  const double memory_us = problem.minimal_bytes() / (ceilings.bandwidth_gbps * 1e9) * 1e6;
  const double compute_us = problem.flops() / (ceilings.compute_tflops * 1e12) * 1e6;
  return std::max(memory_us, compute_us);
}

std::vector<float> random_normal_values(std::int64_t count, std::uint64_t seed) {
  // Blocks of their own generator, seeded from (seed, block), so that the threads fill them in any
  // order and the values do not depend on the thread count. One thread took 4.9 s for a
  // 28672x8192 weight, most of a GPU bench process's time on the lent GPU machine.
  constexpr std::int64_t kBlockValues = 1 << 16;
  std::vector<float> values(static_cast<std::size_t>(count));
  const std::int64_t blocks = (count + kBlockValues - 1) / kBlockValues;
#pragma omp parallel for schedule(static)
  for (std::int64_t block = 0; block < blocks; ++block) {
    std::seed_seq sequence{seed, std::uint64_t(block)};
    std::mt19937_64 rng(sequence);
    std::normal_distribution<float> normal;
    const std::int64_t end = std::min(count, (block + 1) * kBlockValues);
    for (std::int64_t i = block * kBlockValues; i < end; ++i) values[std::size_t(i)] = normal(rng);
  }
  return values;
}

Timing time_repeatedly(const std::function<double()>& sample_us, int warmup, int max_repeats, double min_seconds) {
  for (int i = 0; i < warmup; ++i) sample_us();
  std::vector<double> samples;
  double total_us = 0;
  while (int(samples.size()) < max_repeats && (total_us < min_seconds * 1e6 || samples.size() < 3)) {
    samples.push_back(sample_us());
    total_us += samples.back();
  }
  std::sort(samples.begin(), samples.end());
  Timing timing;
  timing.repeats = int(samples.size());
  timing.median_us = samples[samples.size() / 2];
  const double p10 = samples[samples.size() / 10], p90 = samples[samples.size() * 9 / 10];
  timing.spread = timing.median_us > 0 ? (p90 - p10) / timing.median_us : 0;
  return timing;
}

void make_bench_weight(Nvfp4Matrix& weight, std::int64_t n, std::int64_t k) {
  if (weight.rows == n && weight.cols == k) return;
  const std::vector<float> values = random_normal_values(n * k, 7);
  weight = quantize_weight(values.data(), n, k);
}

}  // namespace fp4gemm::bench
