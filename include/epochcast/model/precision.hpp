// The numeric precision a training job runs in, and which peak of a GPU it therefore meets:
// the rule `predict --precision` states in its output (docs/predict.md, "Precision").
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "epochcast/model/gpu_catalog.hpp"

namespace epochcast {

enum class Precision { kAuto, kFp32, kTf32, kFp16, kBf16 };
[[nodiscard]] const char* to_string(Precision p);  // "auto", "fp32", "tf32", "fp16", "bf16"
[[nodiscard]] std::optional<Precision> precision_from_string(std::string_view s);
// Throws Error(kInvalidArgument) listing the choices for an unknown word.
[[nodiscard]] Precision parse_precision(std::string_view s);
inline constexpr const char* kPrecisionChoices = "auto, fp32, tf32, fp16, bf16";

// The two families the scaling prior is calibrated for: fp32 code (strict FP32 or TF32 tensor
// cores) and mixed precision (fp16/bf16 autocast), as the public table's two precisions.
enum class PrecisionClass { kFp32Code, kMixed };
[[nodiscard]] PrecisionClass precision_class(Precision p);

// What `auto` means, in the words the output shows.
inline constexpr const char* kAutoPrecisionRule =
    "auto: fp32 code with the frameworks' defaults (cuDNN runs it on TF32 tensor cores where the GPU has "
    "them, on the FP32 units elsewhere); a mixed-precision job needs precision fp16 or bf16";

// Measured, not assumed (docs/predict.md, "Precision"): whether a trace's metrics tell a
// mixed-precision job from fp32 code. On the six H200 traces (3 bf16/fp16 autocast, 3 fp32) the
// best single-metric threshold (utilization.gpu, utilization.memory and its ratio to busy,
// power / limit, power per busy share, SM clock) told 4 of 6 apart leave-one-trace-out, chance
// 3: no rule, so auto does not infer the precision and says so.
inline constexpr const char* kAutoPrecisionEvidence =
    "the metrics do not tell mixed precision from fp32 code (the best single-metric rule told 4 of 6 H200 runs "
    "apart leave-one-trace-out, chance 3)";
// auto's assumption is named per target where assuming mixed precision instead would change the
// predicted time by more than this factor (a 2x answer is a different decision; unit test
// PredictPrecision.AutoNamesTargetsWhereTheAssumptionDecides).
inline constexpr double kPrecisionAssumptionWarnRatio = 2.0;

// The rule a prediction for precision `p` follows, as the output states it (kAutoPrecisionRule
// for kAuto).
[[nodiscard]] std::string precision_rule(Precision p);

// The peak a job of precision `p` meets on `gpu`, the rule that chose it and, when the GPU has no
// path for that precision, a warning.
struct ComputePath {
  double tflops = 0;
  std::string unit;     // "TF32 tensor", "FP32", "BF16 tensor", …
  std::string warning;  // empty unless a fallback applied
};
[[nodiscard]] ComputePath compute_path(Precision p, const GpuSpec& gpu);
// Whether `p` runs on the FP16 tensor cores of a GPU from before Ampere (Volta, Turing: FP16
// tensor cores, no TF32 ones), whose peak the scaling prior realises only in part
// (ScalingParams::legacy_tensor_eff). False where the catalog's TF32 figure is unknown.
[[nodiscard]] bool legacy_tensor_path(Precision p, const GpuSpec& gpu);

}  // namespace epochcast
