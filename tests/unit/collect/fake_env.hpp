// Test helper: points NVML at the fake library and sets its environment for one test.
#pragma once

#include <cstdlib>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#ifndef EPOCHCAST_FAKE_NVML
#error "EPOCHCAST_FAKE_NVML (path of libnvml_fake.so) is defined by tests/fakes/CMakeLists.txt"
#endif

namespace epochcast::testing {

inline std::string h200_trace(const char* name = "resnet50_224_bs256_bf16.smi.csv") {
  return std::string(EPOCHCAST_TEST_DATA) + "/h200/" + name;
}

// Sets EPOCHCAST_FAKE_NVML_* variables (and EPOCHCAST_NVML_LIBRARY) and clears them afterwards.
class FakeNvmlEnv {
 public:
  explicit FakeNvmlEnv(std::initializer_list<std::pair<std::string, std::string>> vars) : vars_(vars) {
    vars_.emplace_back("EPOCHCAST_NVML_LIBRARY", EPOCHCAST_FAKE_NVML);
    bool has_trace = false;
    for (const auto& [k, v] : vars_) has_trace |= k == "EPOCHCAST_FAKE_NVML_TRACE";
    if (!has_trace) vars_.emplace_back("EPOCHCAST_FAKE_NVML_TRACE", h200_trace());
    for (const auto& [k, v] : vars_) setenv(k.c_str(), v.c_str(), 1);
  }
  ~FakeNvmlEnv() {
    for (const auto& [k, v] : vars_) unsetenv(k.c_str());
  }
  FakeNvmlEnv(const FakeNvmlEnv&) = delete;
  FakeNvmlEnv& operator=(const FakeNvmlEnv&) = delete;

 private:
  std::vector<std::pair<std::string, std::string>> vars_;
};

}  // namespace epochcast::testing
