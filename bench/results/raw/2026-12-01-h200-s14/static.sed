95,96c\
      {\
    static void* shared_buffer = [] { cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed; cudaThreadExchangeStreamCaptureMode(&mode); void* p = nullptr; cudaMalloc(&p, std::size_t(256) << 20); cudaThreadExchangeStreamCaptureMode(&mode); return p; }();\
    buffer_ = shared_buffer;
101s#const void\* data() const { return buffer_.data(); }#const void* data() const { return buffer_; }#
104s#cuda::StreamBuffer buffer_;#void* buffer_ = nullptr;#
98s#buffer_.data()#buffer_#
