#!/usr/bin/env bash
# `simulate --parallel` with tensor, pipeline and data parallelism end to end (docs/parallel.md):
# the layout line, the pipeline's idle time beside 1F1B's analytic bubble, throughput counting
# every replica and micro-batch, a sweep spec with the same key, and bad values (exit 2, one
# line naming the key).
# Usage: bash parallel_test.sh PATH_TO_placesim
set -u
BIN=${1:?usage: parallel_test.sh PATH_TO_placesim}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
GPT="layers=4,hidden=128,heads=4,seq=64,vocab=1024,positions=64,batch=2"

out=$("$BIN" simulate --graph gpt --graph-opt "$GPT" --cluster dgx-a100 --parallel dp=2,tp=2,pp=2,mb=4) \
  || fail "dp=2,tp=2,pp=2 exited $?: $out"
grep -q '^parallel: dp=2 tp=2 pp=2 mb=4 on 8 GPUs; tp: 8 linear pairs, 19 all-reduces per micro-batch' <<<"$out" \
  || fail "no layout line: $out"
grep -q '^  stage 1: ' <<<"$out" || fail "no stage lines: $out"
grep -q '^pipeline: busiest GPU idle [0-9.]*% of the step, mean [0-9.]*%; 1F1B bubble (pp-1)/(mb+pp-1) = 20.0%' <<<"$out" || fail "no bubble line: $out"
grep -q '^throughput: .* (2 replicas x 4 micro-batches x batch 2 / step)' <<<"$out" || fail "no throughput: $out"
grep -q 'OUT OF MEMORY' <<<"$out" && fail "out of memory: $out"
# Same inputs, same step (deterministic).
again=$("$BIN" simulate --graph gpt --graph-opt "$GPT" --cluster dgx-a100 --parallel dp=2,tp=2,pp=2,mb=4)
[ "$(grep '^step time' <<<"$out")" = "$(grep '^step time' <<<"$again")" ] || fail "two runs differ"
"$BIN" simulate --graph gpt --graph-opt "$GPT,precision=bf16" --cluster dgx-a100 --parallel dp=1 > /dev/null \
  || fail "bf16 exited $?"
# The framework's gradient exchange (ddp=): Horovod's batched fusion-buffer copies and Megatron's
# contiguous buffer launch fewer kernels around the all-reduce than PyTorch DDP's one per gradient.
for d in torch horovod contiguous; do
  "$BIN" simulate --graph resnet50 --graph-opt batch=32 --cluster dgx-a100 --quiet --json \
    --parallel "dp=2,ddp=$d" > "$T/ddp_$d" || fail "ddp=$d exited $?"
done
python3 - "$T/ddp_torch" "$T/ddp_horovod" "$T/ddp_contiguous" <<'PY' || fail "ddp= step times: torch not the longest"
import json, sys
t, h, c = (json.load(open(p))["step_time_s"] for p in sys.argv[1:])
assert t > h and t > c, (t, h, c)
PY
# Gradient accumulation (accumulate=K, docs/parallel.md): the step is K-1 accumulating
# micro-batches and the last one with the exchange and the update; throughput counts K of them.
# The same with seq_dist, whose accumulating micro-batches draw their own lengths.
LAMB="$GPT,optimizer=lamb,optimizer_impl=fused,precision=f16"
"$BIN" simulate --graph gpt --graph-opt "$LAMB" --cluster dgx-a100 --quiet --json \
  --parallel dp=2,accumulate=4,ddp=flat > "$T/acc4" || fail "accumulate=4 exited $?"
"$BIN" simulate --graph gpt --graph-opt "$LAMB" --cluster dgx-a100 --quiet --json \
  --parallel dp=2,ddp=flat > "$T/acc1" || fail "ddp=flat exited $?"
python3 - "$T/acc4" "$T/acc1" <<'PY' || fail "accumulate=4: step is not 3 accumulating + the last"
import json, sys
a, one = (json.load(open(p)) for p in sys.argv[1:])
k = a["accumulate"]
assert k["micro_batches"] == 4, k
assert abs(a["step_time_s"] - (3 * k["accumulating_micro_batch_s"] + k["last_micro_batch_s"])) < 1e-8, a["step_time_s"]
# The last micro-batch carries the exchange and the update; the accumulating ones do not.
assert k["accumulating_micro_batch_s"] < k["last_micro_batch_s"], k
assert "accumulate" not in one and one["step_time_s"] < a["step_time_s"], one["step_time_s"]
PY
out=$("$BIN" simulate --graph gpt --graph-opt "$LAMB" --cluster dgx-a100 --parallel dp=2,accumulate=4,ddp=flat) \
  || fail "accumulate=4 summary exited $?"
grep -q '^accumulate: 4 micro-batches a step: 3 x .* accumulating + .* last' <<<"$out" || fail "no accumulate line: $out"
grep -q '^throughput: .* (2 replicas x 4 accumulated micro-batches x batch 2 / step)' <<<"$out" || fail "no throughput: $out"
SEQ="layers=2,hidden=128,heads=4,seq=512,vocab=1024,positions=512,masked=80,batch=2,optimizer=lamb,optimizer_impl=fused"
SD="seq_dist=$(dirname "$0")/../data/seqlen/wikipedia_bert512.csv"
"$BIN" simulate --graph gpt --graph-opt "$SEQ,$SD" --cluster dgx-a100 --quiet --json \
  --parallel dp=2,accumulate=3,ddp=flat > "$T/sd3" || fail "seq_dist accumulate=3 exited $?"
python3 - "$T/sd3" <<'PY' || fail "seq_dist accumulate=3"
import json, sys
j = json.load(open(sys.argv[1])); k = j["accumulate"]
assert k["micro_batches"] == 3 and k["accumulating_draws"] == 2 and j["seq_dist"]["draws"] == 4, (k, j["seq_dist"]["draws"])
assert abs(j["step_time_s"] - (2 * k["accumulating_micro_batch_s"] + k["last_micro_batch_s"])) < 1e-8
PY
# Tensor parallelism divides the weights each GPU holds.
"$BIN" simulate --graph gpt --graph-opt "$GPT" --cluster dgx-a100 --parallel tp=4 > "$T/tp4" || fail "tp=4"
"$BIN" simulate --graph gpt --graph-opt "$GPT" --cluster dgx-a100 --parallel tp=1 > "$T/tp1" || fail "tp=1"
python3 - "$T/tp1" "$T/tp4" <<'PY' || fail "weights per GPU with tp=4 not about a quarter"
import re, sys
units = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}
def weights(p):
    m = re.search(r"weights \+ optimizer state: ([0-9.]+) (\w+) per GPU", open(p).read())
    return float(m.group(1)) * units[m.group(2)]
one, four = weights(sys.argv[1]), weights(sys.argv[2])
assert 0.2 < four / one < 0.35, (one, four)
PY

# The same key in a sweep spec.
cat > "$T/spec.yaml" <<'YAML'
name: cli-parallel
question: Megatron layouts of a small GPT on one DGX A100
base: {template: pcie-tree, gpu_model: A100-SXM4-80GB}
axes:
  interconnect: [nvswitch]
  gpus: [8]
workloads:
  - {graph: gpt, options: "layers=4,hidden=128,heads=4,seq=64,vocab=1024,positions=64,batch=2", parallel: "dp=2,tp=2,pp=2,mb=4", label: gpt-3d}
  - {graph: gpt, options: "layers=4,hidden=128,heads=4,seq=64,vocab=1024,positions=64,batch=2", parallel: "dp=all,tp=4", label: gpt-tp}
methods: [single-gpu]
YAML
"$BIN" sweep "$T/spec.yaml" -o "$T/s.csv" --threads 1 -q > /dev/null 2> "$T/err" || fail "sweep: $(cat "$T/err")"
[ "$(($(wc -l < "$T/s.csv") - 1))" -eq 2 ] || fail "sweep rows: $(cat "$T/s.csv")"
grep -q '^nvswitch,8,gpt-3d,single-gpu,0\.[0-9]*,0,' "$T/s.csv" || fail "sweep label: $(cat "$T/s.csv")"
"$BIN" sweep "$T/spec.yaml" -o "$T/s2.csv" --threads 2 -q > /dev/null 2>&1 || fail "2-thread sweep"
cmp -s "$T/s.csv" "$T/s2.csv" || fail "1 and 2 threads differ: $(diff "$T/s.csv" "$T/s2.csv")"

expect_error() {
  local want=$1; shift
  "$BIN" "$@" > "$T/o" 2> "$T/e"; local rc=$?
  [ $rc -eq 2 ] || fail "exit $rc (want 2) for: $* ($(cat "$T/e"))"
  [ "$(wc -l < "$T/e")" -eq 1 ] || fail "not one line for: $*: $(cat "$T/e")"
  grep -q -- "$want" "$T/e" || fail "no '$want' in: $(cat "$T/e")"
}
expect_error 'tp' simulate --graph resnet50 --cluster dgx-a100 --parallel tp=2
expect_error 'mb' simulate --graph gpt --graph-opt "$GPT" --cluster dgx-a100 --parallel pp=2,mb=0
expect_error 'tp' simulate --graph gpt --graph-opt "$GPT" --cluster dgx-a100 --parallel tp=two
expect_error 'pp' simulate --graph gpt --graph-opt "$GPT" --cluster dgx-a100 --parallel pp=7
expect_error 'dp\*tp\*pp' simulate --graph gpt --graph-opt "$GPT" --cluster dgx-a100 --parallel dp=2,tp=4,pp=2
expect_error 'mb' simulate --graph gpt --graph-opt "$GPT" --cluster dgx-a100 --parallel tp=8,mb=65536
expect_error 'attention heads' simulate --graph gpt --graph-opt "$GPT" --cluster dgx-a100 --parallel tp=8
expect_error 'zp' simulate --graph gpt --graph-opt "$GPT" --cluster dgx-a100 --parallel zp=2
expect_error 'ddp' simulate --graph resnet50 --cluster dgx-a100 --parallel dp=2,ddp=mxnet
expect_error 'recompute' simulate --graph gpt --graph-opt "$GPT" --cluster dgx-a100 --parallel tp=2,recompute=some
sed 's/parallel: "dp=2,tp=2,pp=2,mb=4"/parallel: "dp=2,accumulate=4"/' "$T/spec.yaml" > "$T/acc.yaml"
expect_error 'accumulate' sweep "$T/acc.yaml" -o "$T/acc.csv" -q
expect_error 'accumulate' simulate --graph gpt --graph-opt "$GPT" --cluster dgx-a100 --parallel dp=2,accumulate=0
expect_error 'accumulate' simulate --graph gpt --graph-opt "$GPT" --cluster dgx-a100 --parallel pp=2,mb=2,accumulate=2
expect_error 'ddp' simulate --graph gpt --graph-opt "$GPT" --cluster dgx-a100 --parallel dp=2,ddp=flatter
expect_error 'optimizer_impl' simulate --graph gpt --graph-opt "$GPT,optimizer=lamb,optimizer_impl=foreach" --cluster dgx-a100 --parallel dp=1
expect_error 'precision' simulate --graph gpt --graph-opt "$GPT,precision=f8" --cluster dgx-a100 --parallel dp=1
echo "parallel_test: ok"
