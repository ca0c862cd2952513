s|gpu_settings::kRotationL2Multiple \* double(l2)|0.0 * double(l2)|
s|std::clamp(copies, gpu_settings::kMinCopies, gpu_settings::kMaxCopies)|std::clamp(copies, 1, 1)|
