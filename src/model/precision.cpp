#include "epochcast/model/precision.hpp"

#include <cmath>

#include <fmt/format.h>

#include "epochcast/core/error.hpp"

namespace epochcast {

const char* to_string(Precision p) {
  switch (p) {
    case Precision::kAuto: return "auto";
    case Precision::kFp32: return "fp32";
    case Precision::kTf32: return "tf32";
    case Precision::kFp16: return "fp16";
    case Precision::kBf16: return "bf16";
  }
  return "auto";
}

std::string precision_rule(Precision p) {
  const char* peak = "FP32";
  switch (p) {
    case Precision::kAuto: return kAutoPrecisionRule;
    case Precision::kFp32: peak = "FP32"; break;
    case Precision::kTf32: peak = "TF32 tensor"; break;
    case Precision::kFp16: peak = "FP16 tensor"; break;
    case Precision::kBf16: peak = "BF16 tensor"; break;
  }
  return fmt::format("{}: every GPU's {} peak (its FP32 rate where it has none, with a warning)", to_string(p), peak);
}

std::optional<Precision> precision_from_string(std::string_view s) {
  for (Precision p : {Precision::kAuto, Precision::kFp32, Precision::kTf32, Precision::kFp16, Precision::kBf16})
    if (s == to_string(p)) return p;
  return std::nullopt;
}

Precision parse_precision(std::string_view s) {
  if (auto p = precision_from_string(s)) return *p;
  throw Error(ErrorCode::kInvalidArgument,
              fmt::format("unknown precision '{}'; the choices are {}", s, kPrecisionChoices));
}

PrecisionClass precision_class(Precision p) {
  return p == Precision::kFp16 || p == Precision::kBf16 ? PrecisionClass::kMixed : PrecisionClass::kFp32Code;
}

ComputePath compute_path(Precision p, const GpuSpec& g) {
  const ComputePath fp32{g.fp32_tflops, "FP32", ""};
  switch (p) {
    case Precision::kFp32:
      return fp32;
    case Precision::kAuto:
    case Precision::kTf32:
      if (g.tensor_tf32_tflops > 0) return {g.tensor_tf32_tflops, "TF32 tensor", ""};
      if (std::isnan(g.tensor_tf32_tflops))
        return {g.fp32_tflops, "FP32",
                fmt::format("the catalog has no tensor_tf32_tflops for {}: predicted at its FP32 rate", g.id)};
      return fp32;  // no TF32 tensor cores (Volta, Turing, Pascal): the FP32 units, as the frameworks do
    case Precision::kFp16:
      if (g.tensor_fp16_tflops > 0) return {g.tensor_fp16_tflops, "FP16 tensor", ""};
      return {g.fp32_tflops, "FP32",
              fmt::format("{} has no FP16 tensor cores: predicted at its FP32 rate", g.id)};
    case Precision::kBf16:
      if (g.tensor_bf16_tflops > 0) return {g.tensor_bf16_tflops, "BF16 tensor", ""};
      if (std::isnan(g.tensor_bf16_tflops) && g.tensor_fp16_tflops > 0)
        return {g.tensor_fp16_tflops, "FP16 tensor",
                fmt::format("the catalog has no tensor_bf16_tflops for {}: predicted at its FP16 tensor rate", g.id)};
      // bf16 autocast still runs there (PyTorch emulates the matmuls), at about the FP32 rate.
      return {g.fp32_tflops, "FP32",
              fmt::format("{} has no BF16 tensor path: bf16 matmuls run on its FP32 units, predicted at the FP32 "
                          "rate (fp16 autocast would use its FP16 tensor cores{})",
                          g.id, g.tensor_fp16_tflops > 0 ? "" : ", which it lacks too")};
  }
  return fp32;
}

bool legacy_tensor_path(Precision p, const GpuSpec& g) {
  if (!(g.tensor_tf32_tflops == 0) || !(g.tensor_fp16_tflops > 0)) return false;
  // The same choice compute_path makes: fp16 always, bf16 only where its figure is unknown.
  return p == Precision::kFp16 || (p == Precision::kBf16 && std::isnan(g.tensor_bf16_tflops));
}

}  // namespace epochcast
