# epochcast_stage(NAME DEPS...): a static library from every .cpp in this folder.
# Stages glob their sources so adding a file needs no CMake edit.
function(epochcast_stage name)
  file(GLOB sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  if(NOT sources)  # a stage not written yet still links
    set(sources ${PROJECT_SOURCE_DIR}/cmake/empty_stage.cpp)
  endif()
  add_library(epochcast_${name} STATIC ${sources})
  add_library(epochcast::${name} ALIAS epochcast_${name})
  target_include_directories(epochcast_${name}
    PUBLIC ${PROJECT_SOURCE_DIR}/include
    PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  target_compile_options(epochcast_${name} PRIVATE -Wall -Wextra -Wpedantic)
  target_compile_definitions(epochcast_${name} PRIVATE EPOCHCAST_VERSION="${PROJECT_VERSION}")
  target_link_libraries(epochcast_${name} PUBLIC ${ARGN})
endfunction()

# epochcast_test(NAME LABEL SOURCES... LIBS ... [TIMEOUT S]): one GoogleTest binary, registered
# with ctest; each test may take TIMEOUT seconds (default 300).
function(epochcast_test name label)
  cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;LIBS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  if(NOT T_SOURCES)
    return()
  endif()
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest_main GTest::gmock)
  target_compile_definitions(${name} PRIVATE
    EPOCHCAST_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    EPOCHCAST_TEST_DATA="${PROJECT_SOURCE_DIR}/tests/data"
    EPOCHCAST_BINARY_DIR="${PROJECT_BINARY_DIR}")
  gtest_discover_tests(${name} PROPERTIES LABELS ${label} TIMEOUT ${T_TIMEOUT} DISCOVERY_TIMEOUT 60)
endfunction()
