#!/usr/bin/env bash
# Imports every topology file in tests/data (and, when given, every file in the folder SHARED:
# topology files of other machines a user keeps outside the repository) with every GPU model of the catalog, NCCL XML files also with none, and keeps what
# each import wrote: the YAML, stdout (its output path made relative), stderr and the exit code.
# Run it with the binary before and after a change to the catalog or the importer and diff the
# two folders: what moved is what the change moved (docs/catalog.md).
#   bash tools/topo_import_matrix.sh build/placesim /tmp/topo-after [SHARED]
#   diff -r /tmp/topo-before /tmp/topo-after
set -euo pipefail
bin=$(realpath "$1")
out=$(realpath -m "$2")
shared=${3:-}
cd "$(dirname "$0")/.."
rm -rf "$out"
mkdir -p "$out"
# The catalog's models as the importer's error message lists them, less the host CPUs.
models=$({ "$bin" import topo --nvidia-smi tests/data/calibration/dgx1v_nvidia-smi-topo.txt \
  --gpu-model '?' -o "$out/none.yaml" 2>&1 || true; } | sed -n 's/.*catalog (\(.*\)), got.*/\1/p' |
  tr ',' '\n' | tr -d ' ' | grep -Ev '^(Xeon|EPYC)')
files=$(ls tests/data/calibration/*nvidia-smi-topo*.txt tests/data/bad/topo-*.txt \
  tests/data/calibration/*.xml tests/data/bad/topo-*.xml)
if [ -n "$shared" ]; then
  [ -d "$shared" ] || { echo "topo_import_matrix: SHARED $shared: not a folder" >&2; exit 2; }
  files="$files $(ls "$shared"/*)"
fi
n=0
for f in $files; do
  tag=$(echo "$f" | sed 's#^[./]*##; s#/#_#g')
  case "$f" in
    *.xml) flag=--nccl-xml list="NONE $models" ;;
    *) flag=--nvidia-smi list="$models" ;;
  esac
  for m in $list; do
    d="$out/$tag.$m"
    mkdir -p "$d"
    args=(import topo "$flag" "$f" -o "$d/out.yaml" --name imported)
    if [ "$m" != NONE ]; then args+=(--gpu-model "$m"); fi
    rc=0
    "$bin" "${args[@]}" >"$d/stdout" 2>"$d/stderr" || rc=$?
    echo "$rc" >"$d/rc"
    sed -i "s#$out/##" "$d/stdout"
    n=$((n + 1))
  done
done
echo "topo_import_matrix: $n imports in $out ($(grep -lx 0 "$out"/*/rc | wc -l) written)"
