#!/usr/bin/python3
"""Per-core rate of NVIDIA ConvNets' PyTorch input pipeline on this machine's CPU.

What one DataLoader worker of DeepLearningExamples' PyTorch/Classification/ConvNets does per
training image (image_classification/dataloaders.py @ 097c7ff9, get_pytorch_train_loader):
torchvision's ImageFolder default loader (PIL open + convert("RGB"), i.e. a full JPEG decode),
RandomResizedCrop(224) (bilinear), RandomHorizontalFlip(), then fast_collate's per-image
np.asarray(uint8) + rollaxis + copy into the batch tensor (normalisation runs later on the GPU).
Also timed: the same followed by torchvision's ToTensor + Normalize (the common torchvision
recipe, normalisation on the CPU), and the decode alone.

EfficientNet's worker (configs.yml @ 0fadac23: `augmentation: autoaugment`, `interpolation:
bicubic`; image_classification/dataloaders.py of that generation, get_pytorch_train_loader):
the same decode, RandomResizedCrop(224) with bicubic interpolation, RandomHorizontalFlip(), then
ConvNets' own AutoaugmentImageNetPolicy (image_classification/autoaugment.py @ 82422354: one of 25
PIL sub-policies drawn per image, each of two operations applied with its probability; written
out below from that file's table, not torchvision's policy), then the same fast_collate copy.
Timed as `convnets_autoaugment`, with its ratio to `convnets` of the same run; torchvision's
AutoAugment(IMAGENET) in place of ConvNets' policy is timed as a check.

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
from PIL import Image, ImageEnhance, ImageOps, features

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


# ConvNets' AutoaugmentImageNetPolicy (autoaugment.py @ 82422354): its 25 sub-policies as
# (probability, operation, magnitude index) pairs, and each operation's magnitudes at index 0..10.
AA_POLICY = [
    (0.8, "equalize", 1, 0.8, "shearY", 4), (0.4, "color", 9, 0.6, "equalize", 3),
    (0.4, "color", 1, 0.6, "rotate", 8), (0.8, "solarize", 3, 0.4, "equalize", 7),
    (0.4, "solarize", 2, 0.6, "solarize", 2), (0.2, "color", 0, 0.8, "equalize", 8),
    (0.4, "equalize", 8, 0.8, "solarizeadd", 3), (0.2, "shearX", 9, 0.6, "rotate", 8),
    (0.6, "color", 1, 1.0, "equalize", 2), (0.4, "invert", 9, 0.6, "rotate", 0),
    (1.0, "equalize", 9, 0.6, "shearY", 3), (0.4, "color", 7, 0.6, "equalize", 0),
    (0.4, "posterize", 6, 0.4, "autocontrast", 7), (0.6, "solarize", 8, 0.6, "color", 9),
    (0.2, "solarize", 4, 0.8, "rotate", 9), (1.0, "rotate", 7, 0.8, "translateY", 9),
    (0.0, "shearX", 0, 0.8, "solarize", 4), (0.8, "shearY", 0, 0.6, "color", 4),
    (1.0, "color", 0, 0.6, "rotate", 2), (0.8, "equalize", 4, 0.0, "equalize", 8),
    (1.0, "equalize", 4, 0.6, "autocontrast", 2), (0.4, "shearY", 7, 0.6, "solarizeadd", 7),
    (0.8, "posterize", 2, 0.6, "solarize", 10), (0.6, "solarize", 8, 0.6, "equalize", 1),
    (0.8, "color", 6, 0.4, "rotate", 5),
]
AA_RANGE = {"shearX": np.linspace(0, 0.3, 11), "shearY": np.linspace(0, 0.3, 11),
            "translateY": np.linspace(0, 250, 11), "rotate": np.linspace(0, 30, 11),
            "color": np.linspace(0.1, 1.9, 11), "posterize": np.round(np.linspace(0, 4, 11)),
            "solarize": np.linspace(0, 256, 11), "solarizeadd": np.linspace(0, 110, 11)}
GREY = (128, 128, 128)


def sign():
    return random.choice([-1, 1])


def aa_rotate(img, deg):
    # rotate through RGBA and composite onto grey, as ConvNets' rotate_with_fill does
    rot = img.convert("RGBA").rotate(deg * sign())
    return Image.composite(rot, Image.new("RGBA", rot.size, (128,) * 4), rot).convert(img.mode)


def aa_solarize_add(img, add, threshold=128):
    lut = [min(255, i + int(add)) if i < threshold else i for i in range(256)]
    return img.point(lut * len(img.getbands()))


AA_OPS = {
    "shearX": lambda img, m: img.transform(img.size, Image.AFFINE, (1, m * sign(), 0, 0, 1, 0),
                                           Image.BICUBIC, fillcolor=GREY),
    "shearY": lambda img, m: img.transform(img.size, Image.AFFINE, (1, 0, 0, m * sign(), 1, 0),
                                           Image.BICUBIC, fillcolor=GREY),
    "translateY": lambda img, m: img.transform(img.size, Image.AFFINE,
                                               (1, 0, 0, 0, 1, m * sign()), fillcolor=GREY),
    "rotate": aa_rotate,
    "color": lambda img, m: ImageEnhance.Color(img).enhance(m),
    "posterize": lambda img, m: ImageOps.posterize(img, int(m)),
    "solarize": lambda img, m: ImageOps.solarize(img, m),
    "solarizeadd": aa_solarize_add,
    "autocontrast": lambda img, m: ImageOps.autocontrast(img),
    "equalize": lambda img, m: ImageOps.equalize(img),
    "invert": lambda img, m: ImageOps.invert(img),
}


def convnets_autoaugment_policy(img):
    p1, op1, m1, p2, op2, m2 = AA_POLICY[random.randint(0, len(AA_POLICY) - 1)]
    for p, op, m in ((p1, op1, m1), (p2, op2, m2)):
        if random.random() < p:
            img = AA_OPS[op](img, AA_RANGE[op][m] if op in AA_RANGE else 0)
    return img


BICUBIC_CROP = T.Compose([T.RandomResizedCrop(224, interpolation=T.InterpolationMode.BICUBIC),
                          T.RandomHorizontalFlip()])
TV_AUTOAUGMENT = T.AutoAugment(T.AutoAugmentPolicy.IMAGENET)


def collate_one(img, batch, i):
    a = np.asarray(img, dtype=np.uint8)  # fast_collate, one image
    batch[i] += torch.from_numpy(np.rollaxis(a, 2))


def convnets_autoaugment(b, batch, i):
    collate_one(convnets_autoaugment_policy(BICUBIC_CROP(decode(b))), batch, i)


def bicubic_crop_only(b, batch, i):
    collate_one(BICUBIC_CROP(decode(b)), batch, i)


def torchvision_autoaugment(b, batch, i):
    collate_one(TV_AUTOAUGMENT(BICUBIC_CROP(decode(b))), batch, i)


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
             ("torchvision_normalise", torchvision_recipe, f32),
             ("convnets_bicubic_crop", bicubic_crop_only, u8),
             ("convnets_autoaugment", convnets_autoaugment, u8),
             ("torchvision_autoaugment", torchvision_autoaugment, u8)]
    medians = {}
    for label, fn, batch in cases:
        rate(fn, blobs, min(50, a.images), batch)  # warm-up
        got = [rate(fn, blobs, a.images, batch) for _ in range(a.repeats)]
        rs = [g[0] for g in got]
        med = medians[label] = statistics.median(rs)
        print("%-22s %7.1f img/s per core of CPU time (min %.1f, max %.1f), %5.0f us/img;"
              " wall %.1f img/s" % (label, med, min(rs), max(rs), 1e6 / med,
                                     statistics.median(g[1] for g in got)))
    # the EfficientNet worker against the plain one of the same run: the ratio carries the
    # measured plain figure (models/parallel.hpp kPilConvnetsUs) to the AutoAugment pipeline
    for label in ("convnets_bicubic_crop", "convnets_autoaugment", "torchvision_autoaugment"):
        print("%s / convnets CPU time per image: %.3f" %
              (label, medians["convnets"] / medians[label]))
    # and paired: 4 x repeats pairs of the plain worker and the AutoAugment one back to back, on
    # a quarter of --images each, the order alternating, so that a change of the shared
    # machine's load between the rows above (seen: ratios 1.06-1.50) does not enter the ratio
    pairs, n = [], max(1, a.images // 4)
    for k in range(4 * a.repeats):
        first, second = (convnets, convnets_autoaugment)[::1 if k % 2 == 0 else -1]
        r1, r2 = rate(first, blobs, n, u8)[0], rate(second, blobs, n, u8)[0]
        pairs.append(r1 / r2 if first is convnets else r2 / r1)
    q = statistics.quantiles(pairs, n=4) if len(pairs) > 1 else [pairs[0]] * 3
    print("convnets_autoaugment / convnets, %d pairs of %d images: median %.3f (quartiles %.3f,"
          " %.3f; min %.3f, max %.3f)" % (len(pairs), n, statistics.median(pairs), q[0], q[2],
                                         min(pairs), max(pairs)))
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
