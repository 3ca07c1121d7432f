# Shared compile settings for every bbprof target.
add_library(bbprof_options INTERFACE)
target_compile_options(bbprof_options INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align
  -Wunused -Woverloaded-virtual -Wimplicit-fallthrough
  $<$<BOOL:${BBPROF_WERROR}>:-Werror>)
target_include_directories(bbprof_options INTERFACE ${PROJECT_SOURCE_DIR})
if(BBPROF_SANITIZE)
  target_compile_options(bbprof_options INTERFACE
    -fsanitize=${BBPROF_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  target_link_options(bbprof_options INTERFACE -fsanitize=${BBPROF_SANITIZE})
endif()
if(BBPROF_BUILD_FUZZERS)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "BBPROF_BUILD_FUZZERS needs clang (libFuzzer); "
                        "configure with -DCMAKE_CXX_COMPILER=clang++")
  endif()
  # Coverage instrumentation everywhere; only the fuzz targets link libFuzzer
  # itself (-fsanitize=fuzzer). Other executables get the sanitizer runtime's
  # no-op coverage callbacks.
  target_compile_options(bbprof_options INTERFACE -fsanitize=fuzzer-no-link)
endif()

# bbprof_add_test(NAME SOURCES... LIBS ...): one GoogleTest binary, registered
# with CTest test by test so a failure names the test.
function(bbprof_add_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main GTest::gmock bbprof_options)
  target_compile_definitions(${name} PRIVATE
    BBPROF_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    BBPROF_SHARED_DIR="${PROJECT_SOURCE_DIR}/../shared"
    BBPROF_BINARY="$<TARGET_FILE:bbprof>")
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60
    PROPERTIES ENVIRONMENT "BBPROF_BINARY=$<TARGET_FILE:bbprof>")
endfunction()
