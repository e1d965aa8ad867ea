#!/usr/bin/env bash
# Published training throughput of standard models (tests/data/published_throughput.csv: NVIDIA
# DeepLearningExamples' ResNet-50, ResNeXt-101 32x4d, SE-ResNeXt-101 32x4d and BERT-large
# pre-training on 1 and 8 GPUs of DGX A100 and DGX-1, TF32/FP32 and mixed precision; Lambda's
# ResNet-50 on synthetic data on 1, 2, 4 and 8 GPUs of A100, H100 and V100 servers, also as an NCHW
# graph, BERT-large SQuAD fine-tuning on A100 and H100 and BERT-base SQuAD on A100, H100 and V100;
# MLPerf Training ResNet-50 on one DGX A100 and one DGX H100; GNMT v2 of NVIDIA and Lambda, a
# recurrent network, in tokens/s; timm's benchmark of 16 CNNs (AMP, NCHW and channels-last) and of
# its vision transformers, MLP-Mixer and ConvNeXt on one GeForce RTX 3090; Lambda's ResNet-50, BERT
# SQuAD and GNMT rows of its Ada and Turing machines: RTX 4090 (1, 2), RTX 6000 Ada (1, 2, 4, 8) and
# Quadro RTX 8000 (1), held out; and, held out in session 22, the 2- and 4-GPU SQuAD and GNMT rows of
# Lambda's A100 SXM4, H100 SXM5, 1CC H100 and V100 servers, BERT-large on 8x A100 and 1-8 V100, and the
# ResNet-50, SQuAD and GNMT rows of Lambda's Dell and Supermicro 8x H100 SXM5 servers on 1-8 GPUs, NGC 24.03; and,
# held out in session 23, GPT-2 124M in eager PyTorch 2.6 on one A100 40GB, in tokens/s: rasbt/LLMs-from-scratch;
# and, held out in session 28, NVIDIA's own BERT-large SQuAD rows on DGX A100 40GB/80GB, DGX-1 and
# DGX-2, MXNet ResNet-50 on DGX A100 and DGX-2, BERT-large pre-training on 2-8 DGX A100 nodes and
# MLPerf ResNet-50 on 8, over InfiniBand; and, held out in session 33, NVIDIA DeepLearningExamples NCF
# (NeuMF, samples/s) on DGX A100 40GB, DGX-1 and DGX-2) against
# `placesim simulate` (`--parallel dp=N` for N > 1): every row's
# error must stay within the row's bound_pct. Prints the table docs/validation.md quotes
# (published, predicted, error, command) and, after it, how many rows lie within the issues' bounds
# (15 % on one GPU, 10 % on several). Simulated time only: nothing here depends on this
# machine's speed.
# Usage: bash published_throughput_test.sh PATH_TO_placesim [--table]
set -u
BIN=${1:?usage: published_throughput_test.sh PATH_TO_placesim [--table]}
SRC=${PLACESIM_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
python3 - "$BIN" "$SRC" "${2:-}" <<'PY'
import csv, json, re, subprocess, sys

bin_, src, table = sys.argv[1], sys.argv[2], sys.argv[3] == "--table"
data = f"{src}/tests/data"
# Lambda's SQuAD figures count 100 steps of `batch` over the time of the steps run_squad.py's loop
# runs (101, or fewer where its 2 epochs end first: 8 x 320 runs 70); tools/squad_plan.py.
sys.path.insert(0, f"{src}/tools")
from squad_plan import counted_steps, steps_run  # noqa: E402
rows = [r for r in csv.DictReader(l for l in open(f"{data}/published_throughput.csv")
                                  if not l.startswith("#"))]
assert len(rows) >= 546, f"expected >= 546 rows, got {len(rows)}"
failures, lines = [], []
inside = {1: [0, 0], 2: [0, 0]}  # one GPU (15 %) / several (10 %): [inside, rows]
# The SQuAD rows (Lambda's and NVIDIA's own, bert-large-squad) run DeepLearningExamples'
# run_squad.py (@ f8b3a63f): apex FusedAdam under --fp16 (one multi-tensor kernel), else
# optimization.py's BertAdam, a Python loop of eager kernels per parameter (optimizer=bertadam);
# each row must state the optimizer its precision ran (docs/validation.md, "BERT SQuAD fine-tuning
# per step: what run_squad.py runs", and "BertAdam's loop as run_squad.py runs it").
for r in rows:
    if r["model"].endswith("-squad-lambda") or r["model"] == "bert-large-squad":
        want = (["optimizer_impl=fused"] if r["precision"] == "AMP"
                else ["optimizer_impl=per_param", "optimizer=bertadam"])
        lacks = [w for w in want if w not in r["graph_opt"].split(",")]
        if lacks:
            failures.append(f"{r['model']} {r['system']} {r['gpus']} GPU {r['precision']}: "
                            f"graph_opt lacks {', '.join(lacks)} (run_squad.py's optimizer)")
# run_squad.py @ f8b3a63f (NVIDIA's rows) and Lambda's fork (LambdaLabsML/DeepLearningExamples @
# b5e12513) wrap the model as `DDP(model)`: apex's message_size and gradient_predivide_factor at
# their defaults, so no SQuAD row may state apex_message_size or apex_predivide (other scripts call
# DDP(model, message_size=250000000, ...); docs/validation.md, "run_squad.py's apex DDP is at its defaults").
for r in rows:
    if r["model"].endswith("-squad-lambda") or r["model"] == "bert-large-squad":
        apex_keys = [k for k in (r.get("parallel") or "").split(",") if k.startswith("apex_")]
        if apex_keys:
            failures.append(f"{r['model']} {r['system']} {r['gpus']} GPU {r['precision']}: states "
                            f"{', '.join(apex_keys)}; run_squad.py calls DDP(model) at apex's defaults")
# NVIDIA's own SQuAD rows (bert-large-squad) ran run_squad.py @ f8b3a63f with modeling.py's separate
# query/key/value nn.Linear (qkv=separate), its GradientClipper every iteration (grad_clip=apex), apex
# AMP O2 under --fp16 (master_weights=apex) and apex.parallel.DistributedDataParallel on several GPUs
# (ddp=apex): docs/validation.md, "NVIDIA's SQuAD rows as run_squad.py runs them".
for r in rows:
    if r["model"] == "bert-large-squad":
        want = ["qkv=separate", "grad_clip=apex"] + (["master_weights=apex"] if r["precision"] == "AMP" else [])
        want = [w for w in want if w not in r["graph_opt"].split(",")]
        if int(r["gpus"]) > 1 and "ddp=apex" not in r.get("parallel", "").split(","):
            want.append("parallel ddp=apex")
        if want:
            failures.append(f"{r['model']} {r['system']} {r['gpus']} GPU {r['precision']}: "
                            f"lacks {', '.join(want)} (run_squad.py's graph and loop)")
# Every GNMT v2 row (NVIDIA's and Lambda's) runs DeepLearningExamples' train.py, whose trainer.py
# (@ 0053b4b8) makes the same host work every iteration on every server: loss.item(),
# int(sum(src_length)) over CUDA lengths and int(sum(tgt_length - 1)) over host ones; and wraps the
# model in apex DistributedDataParallel whenever WORLD_SIZE > 1 (seq2seq/utils.py init_distributed).
# Each row must state them (docs/validation.md, "Every GNMT row states train.py's loop").
for r in rows:
    if r["model"] in ("gnmt-v2", "gnmt-v2-lambda"):
        opts = r["graph_opt"].split(",")
        want = ["loss_item=true", f"host_sum={r['batch']}", f"cpu_sum={r['batch']}"]
        want = [w for w in want if w not in opts]
        if int(r["gpus"]) > 1 and "ddp=apex" not in r.get("parallel", "").split(","):
            want.append("parallel ddp=apex")
        if want:
            failures.append(f"{r['model']} {r['system']} {r['gpus']} GPU {r['precision']}: "
                            f"lacks {', '.join(want)} (train.py's loop)")
# Every AMP row of DeepLearningExamples' ConvNets (NVIDIA's ResNet-50, ResNeXt-101, SE-ResNeXt-101,
# EfficientNet-B0; Lambda's ResNet-50 runs the same main.py) trains through torch.cuda.amp's
# GradScaler: image_classification/training.py @ 0107cf27 `self.scaler.scale(loss).backward()`,
# `scaler.step(self.optimizer)`, `scaler.update()` ("Gradient Scaler is needed for AMP"). Each
# must state it (docs/validation.md, "GradScaler's sync in the AMP steps").
for r in rows:
    if r["model"] in ("resnet50", "resnext101-32x4d", "se-resnext101-32x4d", "efficientnet-b0",
                      "resnet50-lambda-nchw", "resnet50-lambda-synthetic") and r["precision"] == "AMP":
        if "grad_scaler=torch" not in r["graph_opt"].split(","):
            failures.append(f"{r['model']} {r['system']} {r['gpus']} GPU AMP: lacks grad_scaler=torch "
                            "(ConvNets' training.py steps through GradScaler)")
# Every row of DeepLearningExamples' Transformer-big (fairseq) runs ddp_trainer.py @ d666f145: apex
# FusedAdam (no capturable, so GradScaler's ordinary path), `p.grad /= grad_denom` over every
# parameter, gradients set to None (fairseq_optimizer.py zero_grad), and under --amp
# torch.cuda.amp's autocast and GradScaler, not apex O2 (docs/validation.md, "DLE Transformer-big's
# AMP as ddp_trainer.py runs it"), and --fuse-layer-norm's apex FusedLayerNorm, which autocast runs
# in F16 (layer_norm=apex: docs/validation.md, "DLE Transformer-big's casts and LayerNorm").
for r in rows:
    if r["model"] == "transformer-big-dle":
        opts = r["graph_opt"].split(",")
        want = ["optimizer_impl=fused_apex", "grad_div=true", "loss_item=true"]
        if r["precision"] == "AMP":
            want += ["autocast=torch", "grad_scaler=torch", "layer_norm=apex"]
        lacks = [w for w in want if w not in opts]
        wrong = [o for o in opts if o in ("zero_grad=fill", "master_weights=apex")]
        if lacks or wrong:
            failures.append(f"{r['model']} {r['system']} {r['gpus']} GPU {r['precision']}: lacks "
                            f"[{', '.join(lacks)}], states [{', '.join(wrong)}] (ddp_trainer.py's loop)")
for r in rows:
    graph = r["graph"] if "/" not in r["graph"] else f"{data}/{r['graph']}"
    gpus = int(r["gpus"])
    # A seq_dist file (sequence lengths of the run's data) is named relative to tests/data.
    opt = r["graph_opt"].replace("seq_dist=", f"seq_dist={data}/")
    # A cluster with a "/" is a YAML file under tests/data (clusters/Nx-dgx-a100.yaml: N DGX A100
    # nodes written by tools/dgx_cluster.py); else a built-in name.
    cluster = r["cluster"] if "/" not in r["cluster"] else f"{data}/{r['cluster']}"
    cmd = [bin_, "simulate", "--graph", graph, "--graph-opt", opt, "--cluster",
           cluster, "--quiet", "--json"]
    # parallel: more --parallel keys (ddp=horovod: the framework's exchange; accumulate=K: K
    # micro-batches of `batch` per optimizer step); a 1-GPU row with keys runs as dp=1, and so
    # does one with an input pipeline (input=pil...: the data-parallel transform adds the loader).
    par = f"dp={gpus}" + (f",{r['parallel']}" if r.get("parallel") else "")
    loader = any(kv.startswith("input=") for kv in opt.split(","))
    dp = gpus > 1 or r.get("parallel") or loader
    cmd += ["--parallel", par] if dp else ["--placement", "single-gpu"]
    keys = dict(kv.split("=", 1) for kv in par.split(",") if "=" in kv)
    accumulate = int(keys.get("accumulate", 1))
    # Lambda's SQuAD rows: the model's step at each per-rank batch the run has ({batch: steps}),
    # the figure = 100 steps of `batch` over their sum; other rows: one step of `batch`.
    squad = r["model"].endswith("-squad-lambda")
    plan = steps_run(gpus, int(r["batch"])) if squad else {int(r["batch"]): 1}
    run_time, failed = 0.0, False
    for size, count in plan.items():
        sized = list(cmd)
        sized[5] = re.sub(r"\bbatch=\d+", f"batch={size}", opt) if size != int(r["batch"]) else opt
        out = subprocess.run(sized, capture_output=True, text=True)
        if out.returncode != 0:
            failures.append(f"{' '.join(sized)} exited {out.returncode}: {out.stderr.strip()}")
            failed = True
            break
        run_time += count * json.loads(out.stdout)["step_time_s"]
    if failed:
        continue
    step = run_time / (counted_steps() if squad else 1)
    # units_per_sample: what `unit` counts per sample (GNMT: tokens per sentence pair); empty: 1.
    per_sample = float(r.get("units_per_sample") or 1)
    predicted = int(r["batch"]) * per_sample * gpus * accumulate / step
    published = float(r["published"])
    err = 100.0 * (predicted - published) / published
    bound = float(r["bound_pct"])
    # The issues' bounds (15 % on one GPU, 10 % on several), counted over the rows that ran.
    k = 1 if gpus == 1 else 2
    inside[k][1] += 1
    inside[k][0] += abs(err) <= (15.0 if gpus == 1 else 10.0)
    shown = " ".join(c if "," not in c and " " not in c else f"'{c}'" for c in cmd[1:])
    shown = shown.replace(f"{data}/", "tests/data/")
    # ,g turns 7 digits into an exponent (Lambda's GNMT tokens/s on 8 GPUs).
    shown_pub = f"{published:,g}" if published < 1e6 else f"{published:,.0f}"
    lines.append(f"| {r['model']} | {r['system']} | {gpus} | {r['precision']} | {r['batch']} | "
                 f"{shown_pub} | {predicted:,.1f} | {r['unit']} | {err:+.1f} % | `placesim {shown}` |")
    if not abs(err) <= bound:
        failures.append(f"{r['model']} {r['system']} {gpus} GPU {r['precision']}: predicted "
                        f"{predicted:.1f} {r['unit']} against {published:g} ({err:+.1f} %), "
                        f"outside the row's bound of {bound:g} %")
if table or failures:
    print("| model | system | GPUs | precision | batch/GPU | published | predicted "
          "| unit | error | command |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(lines))
    print(f"\nwithin 15 % (one GPU) or 10 % (several): {inside[1][0] + inside[2][0]} of "
          f"{inside[1][1] + inside[2][1]} rows; one GPU {inside[1][0]} of {inside[1][1]}, "
          f"several {inside[2][0]} of {inside[2][1]}")
for f in failures:
    print("FAIL:", f, file=sys.stderr)
sys.exit(1 if failures else 0)
PY
