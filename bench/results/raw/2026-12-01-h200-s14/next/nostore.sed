/store_row_slice<kThreads>(args, slice_rows/,/args.alpha \* kDecodeCompensation, sum_of);/c\
  if (args.m < 0) store_row_slice<kThreads>(args, slice_rows * min(args.m, kTokens), slice_rows, std::int64_t(blockIdx.x) * Layout::kCtaRows + row_begin, args.alpha * kDecodeCompensation, sum_of);
