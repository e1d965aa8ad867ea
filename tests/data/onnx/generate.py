"""Exports torchvision models to ONNX the way tests/data/onnx/*.onnx were made.

Run with Debian's interpreter (python3-torchvision, torch 1.13):
    /usr/bin/python3 generate.py MODEL OUT.onnx [MODEL OUT.onnx ...]
Prints "MODEL PARAMS" per model, PARAMS being torchvision's own sum(p.numel()). Batch 1.

export_params=False keeps the files small (weights become graph inputs that carry only their
shapes); training mode keeps BatchNormalization nodes (eval mode folds them into the convolutions).

Besides torchvision names, MODEL may be "resnext101_32x4d" or "se_resnext101_32x4d" (the
DeepLearningExamples ConvNets architectures, built from torchvision's ResNet), or "transformer_encoder" (an embedding, a 2-layer
torch.nn.TransformerEncoder and a linear head, batch 1 x 32 tokens; export_params=False) or
"transformer_encoder_params" (the same model exported with export_params=True: every weight is an
initializer, the way models usually ship), or "gpt_separate_qkv" (an embedding, 2 pre-norm decoder
blocks whose attention has separate query, key and value linears, as GPT-NeoX/LLaMA-style code
writes them, and a linear head; export_params=True).
"""
import sys

import torch
import torchvision


def export(name, out, batch=1, model=None):
    kwargs = {}
    if name in ("inception_v3", "googlenet"):
        kwargs = dict(aux_logits=False, init_weights=False)
    if model is None:
        model = getattr(torchvision.models, name)(**kwargs)
    # Stochastic depth (EfficientNet) draws a Bernoulli mask that torch.onnx cannot export in
    # training mode; an Identity in its place drops one elementwise multiply per block.
    for parent in model.modules():
        for child_name, child in parent.named_children():
            if type(child).__name__ == "StochasticDepth":
                setattr(parent, child_name, torch.nn.Identity())
    model = model.train()
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


def export_lm(model, label, out, export_params):
    ids = torch.randint(0, 500, (1, 32))
    torch.onnx.export(model, ids, out, export_params=export_params, training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, input_names=["ids"], output_names=["logits"], opset_version=14)
    print(label, sum(p.numel() for p in model.parameters()), flush=True)


def export_transformer(out, export_params):
    torch.manual_seed(0)
    export_lm(TransformerEncoderLM().train(), "transformer_encoder", out, export_params)


class SeparateQkvBlock(torch.nn.Module):
    """Pre-norm causal block: x + out(attn(q(ln x), k(ln x), v(ln x))), then x + mlp(ln x)."""

    def __init__(self, d=64, heads=4, ff=256):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.q, self.k, self.v = (torch.nn.Linear(d, d) for _ in range(3))
        self.out = torch.nn.Linear(d, d)
        self.fc1, self.fc2 = torch.nn.Linear(d, ff), torch.nn.Linear(ff, d)

    def forward(self, x):
        b, t, d = x.shape
        h = self.ln1(x)
        split = lambda y: y.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        q, k, v = split(self.q(h)), split(self.k(h)), split(self.v(h))
        att = (q @ k.transpose(-2, -1)) / (d // self.heads) ** 0.5
        att = att.masked_fill(torch.ones(t, t).triu(1).bool(), float("-inf")).softmax(-1)
        x = x + self.out((att @ v).transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(x))))


class SeparateQkvLM(torch.nn.Module):
    def __init__(self, vocab=500, d=64, layers=2):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, d)
        self.blocks = torch.nn.Sequential(*(SeparateQkvBlock(d) for _ in range(layers)))
        self.ln = torch.nn.LayerNorm(d)
        self.head = torch.nn.Linear(d, vocab)

    def forward(self, ids):
        return self.head(self.ln(self.blocks(self.emb(ids))))


def export_separate_qkv(out):
    torch.manual_seed(0)
    export_lm(SeparateQkvLM().train(), "gpt_separate_qkv", out, export_params=True)


class SqueezeExcitation(torch.nn.Module):
    """Hu et al. 2018 squeeze-and-excitation, as DeepLearningExamples' ConvNets write it
    (image_classification/models/common.py): spatial mean, Linear C -> C/16, ReLU, Linear
    C/16 -> C, sigmoid, channel-wise scale."""

    def __init__(self, channels, squeeze):
        super().__init__()
        self.squeeze = torch.nn.Linear(channels, squeeze)
        self.expand = torch.nn.Linear(squeeze, channels)

    def forward(self, x):
        s = torch.relu(self.squeeze(x.mean([2, 3])))
        return x * torch.sigmoid(self.expand(s)).unsqueeze(-1).unsqueeze(-1)


class SEBottleneck(torchvision.models.resnet.Bottleneck):
    """torchvision's bottleneck with SE on the residual branch before the addition."""

    def __init__(self, inplanes, planes, *args, **kwargs):
        super().__init__(inplanes, planes, *args, **kwargs)
        out = planes * self.expansion
        self.se = SqueezeExcitation(out, out // 16)

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.relu(self.bn2(self.conv2(y)))
        y = self.se(self.bn3(self.conv3(y)))
        return self.relu(y + identity)


def resnext101_32x4d(se=False):
    """ResNeXt-101 32x4d (Xie et al. 2017), the DeepLearningExamples ConvNets arch; torchvision
    0.14 has only 32x8d, so it is torchvision's ResNet with groups=32, width_per_group=4."""
    block = SEBottleneck if se else torchvision.models.resnet.Bottleneck
    return torchvision.models.resnet.ResNet(block, [3, 4, 23, 3], groups=32, width_per_group=4)


def main():
    args = sys.argv[1:]
    for name, out in zip(args[0::2], args[1::2]):
        if name == "gpt_separate_qkv":
            export_separate_qkv(out)
        elif name in ("resnext101_32x4d", "se_resnext101_32x4d"):
            export(name, out, model=resnext101_32x4d(se=name.startswith("se_")))
        elif name.startswith("transformer_encoder"):
            export_transformer(out, export_params=name.endswith("_params"))
        else:
            export(name, out)


if __name__ == "__main__":
    main()
