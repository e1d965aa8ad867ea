#!/usr/bin/env python3
"""The steps run_squad.py runs, and the steps its throughput figure counts, in Lambda's SQuAD
benchmark (docs/validation.md, "Lambda's 8-GPU BERT-base AMP rows count 100 steps for 70").

    tools/squad_plan.py GPUS BATCH      # per-rank batch and count of every step the loop runs
    tools/squad_plan.py --exposed TABLE # per run step: published against the model, ms per GB

TABLE is the output of `bash tests/cli/published_throughput_test.sh build/placesim --table`. For
every Lambda SQuAD row of the A100 SXM4, H100 SXM5 and RTX 6000 Ada servers it undoes the
harness's count (below) on both figures and prints the time a run step takes, published and
modelled, the difference, and that difference per GB of gradients (F32 under TF32/FP32, F16 under
apex O2), with the all-reduce bus bandwidth it would be if wholly exposed (ring: 2 (n-1) / n of the
bytes a rank).

run_squad.py (NVIDIA/DeepLearningExamples @ f8b3a63f and Lambda's fork LambdaLabsML/
DeepLearningExamples @ b5e12513, PyTorch/LanguageModeling/BERT/run_squad.py) times its whole
training loop (`train_start` before the first step to `time_to_train` after the last) and reports
`train_batch_size * max_steps * world_size / time_to_train`. The loop runs `num_train_epochs`
epochs of the rank's DistributedSampler share (padded to a multiple of the world size, the last
batch of an epoch partial: DataLoader's drop_last is False) and breaks when `global_step >
max_steps`, i.e. after max_steps + 1 steps, or when the epochs end, whichever is first.
Lambda's harness passes `--num_train_epochs=2.0 --max_steps=100` (pytorch/scripts/config_v1/
config_pytorch_80GB.sh @ 357c49a7, through run_squad.sh; the 8-GPU log below prints both), and its
logs print `training_features : 88641` for SQuAD v1.1 at max_seq_length 384, doc_stride 128, the
uncased vocabulary, base and large alike (lambdal/deeplearning-benchmark @ e65ebf70 :
pytorch/results/8xA100_80GB_SXM4_v1/PyTorch_bert_{base,large}_squad_FP{16,32}/19-11-2022_*.txt).
So 8 ranks at 320 run 2 x 35 steps (34 of 320 and one of 201 an epoch: the log's "0/35", its
e2e_train_time 59.90 s and 4,273.9 = 320 x 100 x 8 / 59.90), and most runs 101 steps.
"""
import sys

# SQuAD v1.1 training features at max_seq_length 384, doc_stride 128 (run_squad.py's
# convert_examples_to_features), as Lambda's logs print them (above).
SQUAD_TRAIN_FEATURES = 88641
# --num_train_epochs and --max_steps of Lambda's harness (config_pytorch_80GB.sh @ 357c49a7).
HARNESS_EPOCHS = 2
HARNESS_MAX_STEPS = 100


def steps_run(gpus, batch, features=SQUAD_TRAIN_FEATURES, epochs=HARNESS_EPOCHS,
              max_steps=HARNESS_MAX_STEPS):
    """{per-rank batch: steps} of every step run_squad.py's loop runs on each rank."""
    if gpus < 1 or batch < 1:
        raise ValueError(f"gpus and batch must be positive, got {gpus} and {batch}")
    per_rank = -(-features // gpus)  # DistributedSampler: ceil(len / world_size) per rank
    full, last = divmod(per_rank, batch)
    epoch = [(batch, full)] + ([(last, 1)] if last else [])
    left, run = max_steps + 1, {}
    for _ in range(epochs):
        for size, count in epoch:
            take = min(count, left)
            if take:
                run[size] = run.get(size, 0) + take
            left -= take
    return run


def counted_steps(max_steps=HARNESS_MAX_STEPS):
    """The steps the reported figure counts: train_batch_size x max_steps x world_size / time."""
    return max_steps


# Trainable parameters (the logs' model_weights_num: lambdal/deeplearning-benchmark @ e65ebf70,
# pytorch/results/8xA100_80GB_SXM4_v1/PyTorch_bert_{large,base}_squad_FP*/19-11-2022_*.txt).
PARAMETERS = {"bert-large-squad-lambda": 335_150_082, "bert-base-squad-lambda": 109_488_386}
EXPOSED_SYSTEMS = ("Lambda A100 80GB SXM4", "Lambda RTX 6000 Ada", "Lambda H100 80GB SXM5")


def exposed(table):
    """Rows of (system, model, precision, gpus, published ms, model ms, ms/GB, busbw GB/s)."""
    out = []
    for line in open(table):
        cells = [c.strip() for c in line.split("|")]
        if len(cells) < 9 or cells[1] not in PARAMETERS or cells[2] not in EXPOSED_SYSTEMS:
            continue
        gpus, batch = int(cells[3]), int(cells[5])
        published, predicted = (float(c.replace(",", "")) for c in cells[6:8])
        steps = sum(steps_run(gpus, batch).values())
        seconds = [batch * gpus * counted_steps() / rate / steps for rate in (published, predicted)]
        gb = PARAMETERS[cells[1]] * (2 if cells[4] == "AMP" else 4) / 1e9
        extra = seconds[0] - seconds[1]
        busbw = 2 * (gpus - 1) / gpus * gb / extra if gpus > 1 and extra > 0 else float("nan")
        out.append((cells[2], cells[1], cells[4], gpus, seconds[0] * 1e3, seconds[1] * 1e3,
                    extra * 1e3 / gb if gpus > 1 else float("nan"), busbw))
    return out


def main(argv):
    if len(argv) == 3 and argv[1] == "--exposed":
        for row in exposed(argv[2]):
            print("%-22s %-24s %-4s %d GPUs: published %7.1f ms, model %7.1f ms, %+7.1f ms, "
                  "%5.0f ms/GB, busbw if exposed %5.2f GB/s" % (row[0], row[1], row[2], row[3],
                                                                row[4], row[5], row[4] - row[5],
                                                                row[6], row[7]))
        return 0
    if len(argv) != 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    gpus, batch = int(argv[1]), int(argv[2])
    run = steps_run(gpus, batch)
    print(f"{gpus} GPUs x {batch}: runs " + ", ".join(f"{n} steps of {b}" for b, n in run.items())
          + f" ({sum(run.values())} steps), the figure counts {counted_steps()} of {batch}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
