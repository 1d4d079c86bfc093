# Included by the top-level CMakeLists.txt before any library when IX_FUZZ
# is on: in a fuzz build tree every library of the project is compiled with
# coverage instrumentation and ASan/UBSan, so a target links the same
# libraries the programs do (fuzz/CMakeLists.txt) and no list of sources is
# kept twice. No other build tree is affected.
if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "IX_FUZZ needs clang (libFuzzer): configure with -DCMAKE_CXX_COMPILER=clang++")
endif()
# UB aborts (instead of printing and going on), so libFuzzer sees it as a
# crash. pointer-overflow alone is recoverable, so tests/ubsan.supp can
# suppress RapidJSON's own; fuzz/run.sh sets halt_on_error=1, so any other
# still stops the run.
set(IX_FUZZ_SANITIZE -fsanitize=address,undefined -fno-sanitize-recover=all -fsanitize-recover=pointer-overflow
    -fno-omit-frame-pointer)
# -O1 -g1: a third of -O2 -g's build time on 2 cores, and still fast to run.
add_compile_options(-fsanitize=fuzzer-no-link ${IX_FUZZ_SANITIZE} -O1 -g1)
add_link_options(${IX_FUZZ_SANITIZE})
