#!/usr/bin/python3
"""Per-core rate of NVIDIA ConvNets' PyTorch input pipeline on this machine's CPU.

What one DataLoader worker of DeepLearningExamples' PyTorch/Classification/ConvNets does per
training image (image_classification/dataloaders.py @ 097c7ff9, get_pytorch_train_loader):
torchvision's ImageFolder default loader (PIL open + convert("RGB"), i.e. a full JPEG decode),
RandomResizedCrop(224) (bilinear), RandomHorizontalFlip(), then fast_collate's per-image
np.asarray(uint8) + rollaxis + copy into the batch tensor (normalisation runs later on the GPU).
Also timed: the same followed by torchvision's ToTensor + Normalize (the common torchvision
recipe, normalisation on the CPU), and the decode alone.

Run it on one core in one process, e.g.
    taskset -c 1 /usr/bin/python3 tools/input_pipeline_rate.py --repeats 5
It prints one line per pipeline: images/s (median of the repeats, min and max) and us per image.
Inputs: real photos found on this machine (matplotlib's grace_hopper.jpg, scipy's raccoon face),
the raccoon re-encoded by PIL at ImageNet-like sizes; see docs/validation.md ("The input pipeline
on the host CPUs") for why they are representative. Deterministic inputs and crops (seeded).
"""
import argparse
import io
import os
import random
import statistics
import sys
import time

import warnings

import numpy as np
import torch
import torchvision.transforms as T
from PIL import Image, features

GRACE = "/usr/share/matplotlib/mpl-data/sample_data/grace_hopper.jpg"


def raccoon():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import scipy.misc

        return Image.fromarray(scipy.misc.face())  # 1024 x 768 RGB photo, bundled with SciPy


def jpeg(img, size, quality):
    b = io.BytesIO()
    img.resize(size, Image.BILINEAR).save(b, format="JPEG", quality=quality)
    return b.getvalue()


def inputs():
    """(name, jpeg bytes) of the real photos at ImageNet-like sizes."""
    with open(GRACE, "rb") as f:
        out = [("grace_hopper 512x600 (as shipped)", f.read())]
    r = raccoon()
    for size in [(500, 375), (500, 333), (375, 500), (640, 480)]:
        out.append(("raccoon %dx%d q90" % size, jpeg(r, size, 90)))
    return out


def decode(b):
    # torchvision.datasets.folder.pil_loader: open the file, convert("RGB")
    img = Image.open(io.BytesIO(b))
    return img.convert("RGB")


CONVNETS = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip()])
NORMALISE = T.Compose([T.ToTensor(), T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])


def convnets(b, batch, i):
    img = CONVNETS(decode(b))
    a = np.asarray(img, dtype=np.uint8)  # fast_collate, one image
    a = np.rollaxis(a, 2)
    batch[i] += torch.from_numpy(a)


def torchvision_recipe(b, batch, i):
    img = CONVNETS(decode(b))
    batch[i] = NORMALISE(img)


def decode_only(b, batch, i):
    decode(b)


def rate(fn, data, n, batch):
    # CPU time of this process, not wall time: the machine is shared, and a worker's rate on a
    # dedicated core is its CPU-time rate (the wall rate is printed alongside as a check).
    c0, w0 = time.process_time(), time.perf_counter()
    for k in range(n):
        fn(data[k % len(data)], batch, k % batch.shape[0])
    c, w = time.process_time() - c0, time.perf_counter() - w0
    return n / c, n / w


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=400, help="images per repeat (default 400)")
    ap.add_argument("--repeats", type=int, default=5, help="repeats; the median is reported")
    a = ap.parse_args()
    if a.images < 1 or a.repeats < 1:
        sys.exit("input_pipeline_rate.py: --images and --repeats must be at least 1")
    torch.set_num_threads(1)
    # fast_collate's torch.from_numpy of PIL's read-only buffer warns once; the copy is safe
    warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
    random.seed(0)
    torch.manual_seed(0)
    data = inputs()
    cpus = sorted(os.sched_getaffinity(0))
    print("# python %s, torch %s, PIL %s (libjpeg-turbo %s), CPUs %s" %
          (sys.version.split()[0], torch.__version__, Image.__version__,
           features.version("libjpeg_turbo"), cpus))
    for name, b in data:
        print("# input %s: %d bytes" % (name, len(b)))
    blobs = [b for _, b in data]
    u8 = torch.zeros((64, 3, 224, 224), dtype=torch.uint8)
    f32 = torch.zeros((64, 3, 224, 224), dtype=torch.float32)
    cases = [("decode_only", decode_only, u8), ("convnets", convnets, u8),
             ("torchvision_normalise", torchvision_recipe, f32)]
    for label, fn, batch in cases:
        rate(fn, blobs, min(50, a.images), batch)  # warm-up
        got = [rate(fn, blobs, a.images, batch) for _ in range(a.repeats)]
        rs = [g[0] for g in got]
        med = statistics.median(rs)
        print("%-22s %7.1f img/s per core of CPU time (min %.1f, max %.1f), %5.0f us/img;"
              " wall %.1f img/s" % (label, med, min(rs), max(rs), 1e6 / med,
                                     statistics.median(g[1] for g in got)))
    # the batch's hand-over: a worker's collated batch (256 images, 38.5 MB of uint8) is moved
    # to shared memory when it is sent to the main process (torch.multiprocessing's reductions)
    shm = []
    for _ in range(a.repeats):
        t = torch.zeros((256, 3, 224, 224), dtype=torch.uint8)
        c0 = time.process_time()
        t.share_memory_()
        shm.append(time.process_time() - c0)
        del t
    ms = statistics.median(shm) * 1e3
    print("share_memory_ of a 256-image uint8 batch: %.1f ms of CPU time, %.0f us per image" %
          (ms, ms * 1e3 / 256))
    # per input: the decode alone and the ConvNets pipeline, CPU time
    for name, b in data:
        n = max(1, a.images // 4)
        dec = statistics.median(rate(decode_only, [b], n, u8)[0] for _ in range(a.repeats))
        conv = statistics.median(rate(convnets, [b], n, u8)[0] for _ in range(a.repeats))
        print("%-34s decode %6.1f img/s (%4.0f us), convnets %6.1f img/s (%4.0f us)" %
              (name, dec, 1e6 / dec, conv, 1e6 / conv))


if __name__ == "__main__":
    main()
