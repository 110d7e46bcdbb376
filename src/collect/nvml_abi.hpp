// The small part of the NVML C ABI epochcast uses, declared here because Debian ships no
// nvml.h. Values are NVIDIA's documented ones (nvml.h, driver r580); enums are int-sized.
// Shared by the loader (nvml.cpp) and the fake library (tests/fakes).
#pragma once

extern "C" {

typedef int nvmlReturn_t;                 // enum nvmlReturn_enum
typedef struct nvmlDevice_st* nvmlDevice_t;  // opaque handle owned by the driver
typedef int nvmlClockType_t;              // enum nvmlClockType_enum
typedef int nvmlTemperatureSensors_t;     // enum nvmlTemperatureSensors_enum
typedef int nvmlPcieUtilCounter_t;        // enum nvmlPcieUtilCounter_enum
typedef int nvmlPstates_t;                // enum nvmlPStates_enum

// nvmlDeviceGetUtilizationRates: percent of the last sample period (1/6 s to 1 s).
typedef struct {
  unsigned int gpu;     // % of time a kernel was running
  unsigned int memory;  // % of time device memory was read or written
} nvmlUtilization_t;

// nvmlDeviceGetMemoryInfo (v1 struct): bytes.
typedef struct {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;

}  // extern "C"

namespace epochcast::nvml {

// nvmlReturn_t values used or named in messages.
inline constexpr nvmlReturn_t kSuccess = 0;
inline constexpr nvmlReturn_t kErrorUninitialized = 1;
inline constexpr nvmlReturn_t kErrorInvalidArgument = 2;
inline constexpr nvmlReturn_t kErrorNotSupported = 3;
inline constexpr nvmlReturn_t kErrorNoPermission = 4;
inline constexpr nvmlReturn_t kErrorNotFound = 6;
inline constexpr nvmlReturn_t kErrorInsufficientSize = 7;
inline constexpr nvmlReturn_t kErrorDriverNotLoaded = 9;
inline constexpr nvmlReturn_t kErrorTimeout = 10;
inline constexpr nvmlReturn_t kErrorLibraryNotFound = 12;
inline constexpr nvmlReturn_t kErrorFunctionNotFound = 13;
inline constexpr nvmlReturn_t kErrorGpuIsLost = 15;
inline constexpr nvmlReturn_t kErrorResetRequired = 16;
inline constexpr nvmlReturn_t kErrorLibRmVersionMismatch = 18;
inline constexpr nvmlReturn_t kErrorNoData = 21;
inline constexpr nvmlReturn_t kErrorUnknown = 999;

// nvmlClockType_t
inline constexpr nvmlClockType_t kClockGraphics = 0;
inline constexpr nvmlClockType_t kClockSm = 1;
inline constexpr nvmlClockType_t kClockMem = 2;
// nvmlTemperatureSensors_t
inline constexpr nvmlTemperatureSensors_t kTemperatureGpu = 0;
// nvmlPcieUtilCounter_t; the values come back in KB/s (KiB, as nvtop reads them).
inline constexpr nvmlPcieUtilCounter_t kPcieTxBytes = 0;
inline constexpr nvmlPcieUtilCounter_t kPcieRxBytes = 1;
// nvmlPstates_t: P0..P15 are 0..15.
inline constexpr nvmlPstates_t kPstateUnknown = 32;

// Buffer sizes: NVML_DEVICE_NAME_V2_BUFFER_SIZE, NVML_DEVICE_UUID_V2_BUFFER_SIZE.
inline constexpr unsigned kNameBufferSize = 96;
inline constexpr unsigned kUuidBufferSize = 96;

// Text for a return code when the library's nvmlErrorString is unavailable.
inline const char* return_code_name(nvmlReturn_t code) {
  switch (code) {
    case kSuccess: return "SUCCESS";
    case kErrorUninitialized: return "UNINITIALIZED";
    case kErrorInvalidArgument: return "INVALID_ARGUMENT";
    case kErrorNotSupported: return "NOT_SUPPORTED";
    case kErrorNoPermission: return "NO_PERMISSION";
    case kErrorNotFound: return "NOT_FOUND";
    case kErrorInsufficientSize: return "INSUFFICIENT_SIZE";
    case kErrorDriverNotLoaded: return "DRIVER_NOT_LOADED";
    case kErrorTimeout: return "TIMEOUT";
    case kErrorLibraryNotFound: return "LIBRARY_NOT_FOUND";
    case kErrorFunctionNotFound: return "FUNCTION_NOT_FOUND";
    case kErrorGpuIsLost: return "GPU_IS_LOST";
    case kErrorResetRequired: return "RESET_REQUIRED";
    case kErrorLibRmVersionMismatch: return "LIB_RM_VERSION_MISMATCH";
    case kErrorNoData: return "NO_DATA";
    default: return "UNKNOWN";
  }
}

}  // namespace epochcast::nvml
