#!/usr/bin/env bash
# The README's second command: the whole test suite with CTest, on the Release build (build/,
# made by tools/setup.sh; built here if missing) and on an ASan + UBSan build of everything that
# does not link LibTorch (build-asan/, asserts live: -DPLACESIM_ASSERTS=ON undoes NDEBUG), and,
# with PLACESIM_TSAN=1, a ThreadSanitizer build (build-tsan/) running the batch oracle, sweep and
# streamed-simulation tests (the event loop beside the thread that builds the step).
#
#   tools/test.sh               # all configurations
#   PLACESIM_SKIP_ASAN=1 tools/test.sh    # Release build only (quick local runs)
#   PLACESIM_TSAN=1 tools/test.sh         # also the ThreadSanitizer build (not yet run in CI)
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache hits across clones: paths under the checkout are hashed relative to it.
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
jobs=$(nproc 2>/dev/null || echo 2)

if [ ! -f build/build.ninja ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DPLACESIM_WERROR=ON
fi
cmake --build build -j "$jobs"
echo "== tests: Release build (build/)"
ctest --test-dir build --output-on-failure -j "$jobs"

if [ -z "${PLACESIM_SKIP_ASAN:-}" ]; then
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPLACESIM_SANITIZE=ON \
    -DPLACESIM_WITH_TORCH=OFF -DPLACESIM_WITH_MPI=OFF -DPLACESIM_BUILD_BENCHMARKS=OFF \
    -DPLACESIM_WERROR=ON -DPLACESIM_ASSERTS=ON
  cmake --build build-asan -j "$jobs"
  echo "== tests: ASan + UBSan build without LibTorch (build-asan/), slow tests excluded"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -j "$jobs" -LE slow
fi

if [ -n "${PLACESIM_TSAN:-}" ]; then
  # The multi-threaded parts without LibTorch (its library is not instrumented): the batch
  # oracle (simulations on oneTBB threads), sweeps (points on oneTBB threads, journal writes) and
  # the event loop simulating a step while another thread generates, prices and files it
  # (StreamedSimulation.*, GptHuge.*: arrays published through release/acquire watermarks).
  cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPLACESIM_TSAN=ON \
    -DPLACESIM_WITH_TORCH=OFF -DPLACESIM_WITH_MPI=OFF -DPLACESIM_BUILD_BENCHMARKS=OFF \
    -DPLACESIM_WERROR=ON -DPLACESIM_ASSERTS=ON
  cmake --build build-tsan -j "$jobs" --target placesim_sim_tests placesim_policy_tests \
    placesim_models_tests placesim
  echo "== tests: ThreadSanitizer build (build-tsan/): batch oracle, sweeps, streamed simulation"
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
    ctest --test-dir build-tsan --output-on-failure -j "$jobs" -R 'Oracle|Batch|Sweep|sweep'
  # The loop against the builder's std::thread, pinned to one CPU so that oneTBB starts no
  # workers: its scheduler is in the uninstrumented libtbb, and every task hand-off between
  # workers reads as a race to TSan (docs/engine.md, "Parallel engine"). --threads' explicit
  # arenas still run the loop and the builder side by side.
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 taskset -c 0 \
    ctest --test-dir build-tsan --output-on-failure -R 'StreamedSimulation|GptHuge'
fi
