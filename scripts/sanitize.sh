#!/usr/bin/env bash
# Builds epochcast with a sanitizer and runs the tests under it.
#   scripts/sanitize.sh asan   ASan + UBSan (clang, every target, with the libFuzzer targets'
#                              coverage: the same build runs tests/fuzz/run.sh) -> build-fuzz,
#                              then the whole suite: ctest -LE gpu
#   scripts/sanitize.sh tsan   ThreadSanitizer (clang) -> build-tsan, then the tests of the
#                              threaded parts: fit workers (test_model), the sampler, flush and
#                              status threads (test_collect, CollectCli), the store's concurrent
#                              writers (test_store), the server (ServeCli, ServeStore, ServeLimits)
#                              and the front's loop and workers (test_net)
# Extra arguments go to ctest (asan) or name gtest filters (tsan: FILTER=...). JOBS=N (default 2).
# ONLY="test_net test_collect ...": build and run only those test binaries (both modes), for a
# box with little CPU; test_integration brings the CLI it starts.
# A report fails the run (halt_on_error / exitcode); record results in docs/fuzzing.md ("Sanitizers").
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-}
shift || true
jobs=${JOBS:-2}

case "$mode" in
  asan)
    # The fuzz targets' build (same flags): one compile serves both.
    B=${BUILD_DIR:-build-fuzz}
    tests/fuzz/configure.sh "$B" fuzz
    export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:abort_on_error=1:detect_stack_use_after_return=1}
    export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
    # LeakSanitizer: XGBoost keeps per-thread OpenMP state for the process's life.
    export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tests/sanitizers/lsan.supp}
    if [ -n "${ONLY:-}" ]; then
      targets=$ONLY
      [[ " $ONLY " == *" test_integration "* ]] && targets="$targets epochcast"
      cmake --build "$B" -j"$jobs" --target $targets
      status=0
      for t in $ONLY; do
        echo "== asan: $t"
        "$B/tests/$t" "$@" || status=1
      done
      exit $status
    fi
    cmake --build "$B" -j"$jobs"
    ctest --test-dir "$B" --output-on-failure -LE gpu -j"$jobs" "$@"
    ;;
  tsan)
    B=${BUILD_DIR:-build-tsan}
    tests/fuzz/configure.sh "$B" thread
    only=${ONLY:-test_net test_model test_collect test_store test_service test_integration}
    targets=$only
    [[ " $only " == *" test_integration "* ]] && targets="$targets epochcast"
    cmake --build "$B" -j"$jobs" --target $targets
    export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:exitcode=66:second_deadlock_stack=1:suppressions=$PWD/tests/sanitizers/tsan.supp}
    status=0
    run() {
      echo "== tsan: $*"
      "$@" || status=1
    }
    for t in $only; do
      case "$t" in
        test_model) run "$B/tests/test_model" --gtest_filter='*ThreadCount*:*ThreadSafe*' ;;
        test_store) run "$B/tests/test_store" --gtest_filter='*Concurrent*:*Locked*' ;;
        # The CLI the integration tests start is the TSan build: a report there exits 66.
        test_integration)
          run "$B/tests/test_integration" --gtest_filter="${FILTER:-ServeCli*:ServeStore*:ServeLimits*:CollectCli*}" ;;
        *) run "$B/tests/$t" ;;
      esac
    done
    exit $status
    ;;
  *)
    echo "usage: scripts/sanitize.sh asan|tsan [ctest args]" >&2
    exit 2
    ;;
esac
