"""Exports torchvision models to ONNX the way tests/data/onnx/*.onnx were made.

Run with Debian's interpreter (python3-torchvision, torch 1.13):
    /usr/bin/python3 generate.py MODEL OUT.onnx [MODEL OUT.onnx ...]
Prints "MODEL PARAMS" per model, PARAMS being torchvision's own sum(p.numel()). Batch 1.

export_params=False keeps the files small (weights become graph inputs that carry only their
shapes); training mode keeps BatchNormalization nodes (eval mode folds them into the convolutions).

Besides torchvision names, MODEL may be "transformer_encoder" (an embedding, a 2-layer
torch.nn.TransformerEncoder and a linear head, batch 1 x 32 tokens; export_params=False) or
"transformer_encoder_params" (the same model exported with export_params=True: every weight is an
initializer, the way models usually ship).
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


class TransformerEncoderLM(torch.nn.Module):
    """Token ids -> embedding -> 2 encoder layers (4 heads, d 64, feed-forward 256) -> vocab logits."""

    def __init__(self, vocab=500, d=64, heads=4, ff=256, layers=2):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, d)
        layer = torch.nn.TransformerEncoderLayer(d, heads, ff, dropout=0.1, batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, layers)
        self.head = torch.nn.Linear(d, vocab)

    def forward(self, ids):
        return self.head(self.encoder(self.emb(ids)))


def export_transformer(out, export_params):
    torch.manual_seed(0)
    model = TransformerEncoderLM().train()
    ids = torch.randint(0, 500, (1, 32))
    torch.onnx.export(model, ids, out, export_params=export_params, training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, input_names=["ids"], output_names=["logits"], opset_version=14)
    print("transformer_encoder", sum(p.numel() for p in model.parameters()), flush=True)


def main():
    args = sys.argv[1:]
    for name, out in zip(args[0::2], args[1::2]):
        if name.startswith("transformer_encoder"):
            export_transformer(out, export_params=name.endswith("_params"))
        else:
            export(name, out)


if __name__ == "__main__":
    main()
