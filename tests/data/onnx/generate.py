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

timm's (huggingface/pytorch-image-models) vision transformers, for its RTX 3090 training
benchmark (tests/data/published_throughput.csv): "vit_base_patch16_224", "vit_base_patch32_224",
"vit_small_patch16_224" and "deit_tiny_patch16_224" are TimmVit below with timm's sizes
(timm/models/vision_transformer.py: a Conv2d patch embedding, a class token, learned position
embeddings, pre-norm blocks of LayerNorm(eps 1e-6), attention with a qkv bias and a GELU MLP,
a final LayerNorm and a linear head; the plain models have no distillation token), timm's and
torchvision's parameter count; "mixer_b16_224" is MLP-Mixer B/16 (Tolstikhin et al. 2021; timm/models/
mlp_mixer.py: patch 16, 12 blocks of width 768, token MLP 384, channel MLP 3072); "convnext_tiny"
is torchvision's, timm's convnext_tiny with the same parameter count. All export with a dynamic
batch axis (`--batch N` sets it) at opset 17, whose LayerNormalization is the one kernel PyTorch
runs (opset 14 spells it as nine elementwise and reduction nodes). The ViTs are written here
rather than taken from torchvision, whose patch grid is computed by a traced division that ONNX
shape inference cannot follow, and their class token's expand is exported with -1 as 1 (see
expand_symbolic). torchvision's swin_t exports but its shapes do not survive inference (its
shifted-window reshapes divide traced sizes), so it is not among the graphs.
"""
import sys

import torch
import torchvision


def export(name, out, batch=1, model=None, dynamic_batch=False, opset=None):
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
    params = sum(p.numel() for p in model.parameters())
    dynamic = {"input": {0: "batch"}, "logits": {0: "batch"}} if dynamic_batch else None
    torch.onnx.export(model, x, out, export_params=False, training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, input_names=["input"], output_names=["logits"],
                      dynamic_axes=dynamic, opset_version=opset)
    print(name, params, flush=True)


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


# timm's sizes (timm/models/vision_transformer.py): patch, depth, heads, width, MLP width.
TIMM_VIT = {
    "vit_base_patch16_224": (16, 12, 12, 768, 3072),
    "vit_base_patch32_224": (32, 12, 12, 768, 3072),
    "vit_small_patch16_224": (16, 12, 6, 384, 1536),
    "deit_tiny_patch16_224": (16, 12, 3, 192, 768),
}


class TimmAttention(torch.nn.Module):
    """timm's Attention (vision_transformer.py): one qkv Linear with bias, (q @ k^T) * scale,
    softmax, @ v, a proj Linear; attention and projection dropout 0 (benchmark.py's --drop 0)."""

    def __init__(self, dim, heads):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.scale = self.head_dim ** -0.5
        self.qkv, self.proj = torch.nn.Linear(dim, dim * 3), torch.nn.Linear(dim, dim)

    def forward(self, x):
        b, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4).unbind(0)
        attn = ((q @ k.transpose(-2, -1)) * self.scale).softmax(dim=-1)
        return self.proj((attn @ v).transpose(1, 2).reshape(b, n, c))


class TimmBlock(torch.nn.Module):
    """x + attn(norm1(x)), then x + mlp(norm2(x)); LayerNorm eps 1e-6, GELU MLP."""

    def __init__(self, dim, heads, mlp):
        super().__init__()
        self.norm1, self.norm2 = torch.nn.LayerNorm(dim, eps=1e-6), torch.nn.LayerNorm(dim, eps=1e-6)
        self.attn = TimmAttention(dim, heads)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(dim, mlp), torch.nn.GELU(), torch.nn.Linear(mlp, dim))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class TimmVit(torch.nn.Module):
    """timm's VisionTransformer with a class token (no distillation token): PatchEmbed (Conv2d,
    flatten(2).transpose(1, 2)), cat(cls_token), + pos_embed, blocks, LayerNorm, the class
    token's features, a Linear head. Same parameters as torchvision's VisionTransformer."""

    def __init__(self, patch, depth, heads, dim, mlp, size=224, classes=1000):
        super().__init__()
        tokens = (size // patch) ** 2
        self.patch_embed = torch.nn.Conv2d(3, dim, patch, patch)
        self.cls_token = torch.nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = torch.nn.Parameter(torch.zeros(1, tokens + 1, dim))
        self.blocks = torch.nn.Sequential(*(TimmBlock(dim, heads, mlp) for _ in range(depth)))
        self.norm = torch.nn.LayerNorm(dim, eps=1e-6)
        self.head = torch.nn.Linear(dim, classes)

    def forward(self, x):
        x = self.patch_embed(x).flatten(2).transpose(1, 2)
        x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1) + self.pos_embed
        return self.head(self.norm(self.blocks(x))[:, 0])


def timm_vit(name):
    return TimmVit(*TIMM_VIT[name])


def expand_symbolic(g, self, size, implicit):
    """aten::expand as ONNX Expand of the sizes with -1 written as 1 (Expand broadcasts both
    ways, so 1 keeps the dimension, torch/onnx/symbolic_opset9.py's own comment). torch 1.13
    instead maps -1 through Equal/Where, which ONNX shape inference cannot propagate, leaving
    every shape after a dynamic-batch class token unknown."""
    from torch.onnx import symbolic_helper as h
    if h._is_packed_list(size):
        dims = []
        for d in h._unpack_list(size):
            c = h._maybe_get_const(d, "i")
            dims.append(g.op("Constant", value_t=torch.tensor([1 if c == -1 else c]))
                        if not h._is_value(c) else g.op("Unsqueeze", d, g.op("Constant", value_t=torch.tensor([0]))))
        size = g.op("Concat", *dims, axis_i=0)
    return g.op("Expand", self, size)


class MixerBlock(torch.nn.Module):
    """timm's MixerBlock: x + tokens_mlp(norm1(x)^T)^T, then x + channels_mlp(norm2(x))."""

    def __init__(self, dim, tokens, token_mlp, channel_mlp):
        super().__init__()
        self.norm1, self.norm2 = torch.nn.LayerNorm(dim, eps=1e-6), torch.nn.LayerNorm(dim, eps=1e-6)
        mlp = lambda d, h: torch.nn.Sequential(torch.nn.Linear(d, h), torch.nn.GELU(), torch.nn.Linear(h, d))
        self.mlp_tokens, self.mlp_channels = mlp(tokens, token_mlp), mlp(dim, channel_mlp)

    def forward(self, x):
        x = x + self.mlp_tokens(self.norm1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.mlp_channels(self.norm2(x))


class MlpMixer(torch.nn.Module):
    """MLP-Mixer B/16 at 224 (timm mixer_b16_224): Conv2d patch stem, 12 blocks, LayerNorm, token mean, head."""

    def __init__(self, patch=16, dim=768, depth=12, token_mlp=384, channel_mlp=3072, classes=1000):
        super().__init__()
        tokens = (224 // patch) ** 2
        self.stem = torch.nn.Conv2d(3, dim, patch, patch)
        self.blocks = torch.nn.Sequential(*(MixerBlock(dim, tokens, token_mlp, channel_mlp) for _ in range(depth)))
        self.norm = torch.nn.LayerNorm(dim, eps=1e-6)
        self.head = torch.nn.Linear(dim, classes)

    def forward(self, x):
        x = self.stem(x).flatten(2).transpose(1, 2)
        return self.head(self.norm(self.blocks(x)).mean(dim=1))


def main():
    args = sys.argv[1:]
    for name, out in zip(args[0::2], args[1::2]):
        if name == "gpt_separate_qkv":
            export_separate_qkv(out)
        elif name in ("resnext101_32x4d", "se_resnext101_32x4d"):
            export(name, out, model=resnext101_32x4d(se=name.startswith("se_")))
        elif name in TIMM_VIT:
            torch.onnx.register_custom_op_symbolic("::expand", expand_symbolic, 17)
            export(name, out, model=timm_vit(name), dynamic_batch=True, opset=17)
        elif name == "mixer_b16_224":
            export(name, out, model=MlpMixer(), dynamic_batch=True, opset=17)
        elif name == "convnext_tiny":
            export(name, out, dynamic_batch=True, opset=17)
        elif name.startswith("transformer_encoder"):
            export_transformer(out, export_params=name.endswith("_params"))
        else:
            export(name, out)


if __name__ == "__main__":
    main()
