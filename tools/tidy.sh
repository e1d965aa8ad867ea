#!/usr/bin/env bash
# clang-tidy (.clang-tidy) on the C++ sources a change touched, with the build's compile commands.
#   bash tools/tidy.sh               # files changed by the last commit (HEAD~1..HEAD; a merge: its branch)
#   TIDY_BASE=main bash tools/tidy.sh   # files changed since another commit
#   bash tools/tidy.sh sim/engine.cpp   # the files named
# Exits 1 when a check listed in WarningsAsErrors fires; the other checks print warnings to
# read (CONTRIBUTING.md: clean before review). Needs `build/compile_commands.json` (tools/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
tidy=$(command -v clang-tidy-14 || command -v clang-tidy || true)
if [ -z "$tidy" ]; then
  echo "tidy.sh: clang-tidy not found (apt-get install clang-tidy; tools/packages.txt)" >&2
  exit 2
fi
build=${TIDY_BUILD:-build}
if [ ! -f "$build/compile_commands.json" ]; then
  echo "tidy.sh: $build/compile_commands.json missing (configure and build first: tools/setup.sh)" >&2
  exit 2
fi
if [ $# -gt 0 ]; then
  files=("$@")
else
  base=${TIDY_BASE:-HEAD~1}
  if ! git rev-parse -q --verify "$base^{commit}" >/dev/null; then
    echo "tidy.sh: no commit $base to compare with; nothing to check"
    exit 0
  fi
  mapfile -t files < <(git diff --name-only --diff-filter=AMR "$base" -- \
    'sim/*.cpp' 'models/*.cpp' 'calibration/*.cpp' 'policy/*.cpp' 'tools/*.cpp')
fi
# clang-tidy 14 cannot parse LibTorch 1.13's headers under libstdc++ 12 in C++20 (errors inside
# ATen's IValue): the translation units that include <torch/...> (policy/rl_*.cpp, kept apart
# for that reason among others) are compiled and tested but not tidied; said below.
kept=()
skipped=0
for f in "${files[@]}"; do
  if [ -f "$f" ] && grep -q '^#include <torch/' "$f"; then skipped=$((skipped + 1)); else kept+=("$f"); fi
done
if [ "$skipped" -gt 0 ]; then echo "tidy.sh: $skipped LibTorch translation units not tidied (clang 14 cannot parse LibTorch's headers)"; fi
files=("${kept[@]}")
if [ ${#files[@]} -eq 0 ]; then
  echo "tidy.sh: no C++ source changed"
  exit 0
fi
rc=0
warnings=0
for f in "${files[@]}"; do
  # GCC-only warning flags in the compile commands are not clang-tidy's business.
  out=$("$tidy" -p "$build" --quiet --extra-arg=-Wno-unknown-warning-option "$f" 2>&1) || rc=1
  n=$(grep -c ': warning: ' <<<"$out" || true)
  e=$(grep -c ': error: ' <<<"$out" || true)
  warnings=$((warnings + n))
  if [ "$n" -gt 0 ] || [ "$e" -gt 0 ]; then grep -E ': (warning|error): ' <<<"$out" || true; fi
done
echo "tidy.sh: ${#files[@]} files, $warnings warnings$([ $rc -ne 0 ] && echo ', errors (WarningsAsErrors) above')"
exit $rc
