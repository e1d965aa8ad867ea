"""Exports torchvision models to ONNX the way tests/data/onnx/*.onnx were made.

Run with Debian's interpreter (python3-torchvision, torch 1.13):
    /usr/bin/python3 generate.py MODEL OUT.onnx [MODEL OUT.onnx ...]
Prints "MODEL PARAMS" per model, PARAMS being torchvision's own sum(p.numel()). Batch 1.

export_params=False keeps the files small (weights become graph inputs that carry only their
shapes); training mode keeps BatchNormalization nodes (eval mode folds them into the convolutions).
"""
import sys

import torch
import torchvision


def export(name, out, batch=1):
    kwargs = {}
    if name in ("inception_v3", "googlenet"):
        kwargs = dict(aux_logits=False, init_weights=False)
    model = getattr(torchvision.models, name)(**kwargs).train()
    size = 299 if name == "inception_v3" else 224
    x = torch.randn(batch, 3, size, size)
    torch.onnx.export(model, x, out, export_params=False, training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, input_names=["input"], output_names=["logits"])
    print(name, sum(p.numel() for p in model.parameters()), flush=True)


def main():
    args = sys.argv[1:]
    for name, out in zip(args[0::2], args[1::2]):
        export(name, out)


if __name__ == "__main__":
    main()
