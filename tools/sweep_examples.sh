#!/usr/bin/env bash
# Re-runs the example sweeps of docs/sweeps.md: CSVs into docs/sweeps/, plots into
# docs/img/sweeps/<spec>/, and prints the Markdown tables.
#   tools/sweep_examples.sh build/placesim
set -eu
PLACESIM=$(realpath "${1:?usage: sweep_examples.sh PATH_TO_placesim}")
SRC=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$SRC/docs/sweeps"
for spec in nmt_nvlink_vs_pcie gpt2_4090_host_bandwidth paper_4gpu_pcie_peer resnet50_data_parallel; do
  csv="$SRC/docs/sweeps/$spec.csv"
  rm -f "$csv" "$csv.partial"
  rm -rf "$SRC/docs/img/sweeps/$spec"
  "$PLACESIM" sweep "$SRC/scenarios/sweeps/$spec.yaml" -o "$csv" --plot "$SRC/docs/img/sweeps/$spec" -q >/dev/null
  echo "### $spec"
  /usr/bin/python3 "$SRC/tools/sweep_table.py" "$csv"
  echo
done
