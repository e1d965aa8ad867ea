"""Exports NVIDIA DeepLearningExamples' Transformer-big (fairseq) to ONNX for training-step graphs.

Run with Debian's interpreter (torch 1.13):
    /usr/bin/python3 fairseq_transformer.py OUT.onnx [SRC_LEN TGT_LEN]
Prints the parameter count (torch's sum(p.numel())). Batch axis dynamic (`--batch N` sets it).

The model is DeepLearningExamples' PyTorch/Translation/Transformer, `--arch
transformer_wmt_en_de_big_t2t --share-all-embeddings` (fairseq/models/transformer.py @ d666f145),
re-written here with the same shapes and op sequence:
- one embedding of the joined dictionary (33708 BPE tokens + 4 specials = 33712 rows, a multiple
  of 8: fairseq's Dictionary.finalize pads to 8) shared by encoder, decoder and the output
  projection (`F.linear(x, embed_tokens.weight)`, no bias); embed_scale sqrt(1024); sinusoidal
  positions (a buffer, no parameters); dropout 0.1 after the sum;
- 6 encoder and 6 decoder layers, d_model 1024, 16 heads, FFN 4096, ReLU, pre-norm
  (`encoder_normalize_before = decoder_normalize_before = True` in the _t2t architecture) with a
  final LayerNorm on each stack; dropout 0.1 after each residual branch, attention dropout 0.1 on
  the softmax, ReLU dropout 0.1 inside the FFN;
- attention as fairseq's MultiheadAttention computes it: one in-projection of 3 x 1024 for self
  attention (q, k and v from one GEMM), q and kv projections of the same weight for encoder-decoder
  attention, q scaled by head_dim^-0.5, a batched GEMM for the scores, the decoder's causal mask
  added, softmax, dropout, a batched GEMM with v, the out-projection;
- logits reshaped to [batch x tgt_len, vocab] so that the import puts its softmax cross-entropy
  there (the run's label_smoothed_cross_entropy on log_softmax(logits, dtype=float32)).
Not modelled: the encoder's key-padding mask (fairseq drops it when a batch has no padding).
Opset 17 so that each LayerNorm is one node, as apex's FusedLayerNorm (`--fuse-layer-norm`) runs it.
"""
import math
import sys

import torch

VOCAB = 33712
D = 1024
HEADS = 16
FFN = 4096
LAYERS = 6
DROPOUT = 0.1


def sinusoid(length, dim):
    half = dim // 2
    step = math.log(10000) / (half - 1)
    freq = torch.exp(torch.arange(half, dtype=torch.float) * -step)
    ang = torch.arange(length, dtype=torch.float).unsqueeze(1) * freq.unsqueeze(0)
    return torch.cat([torch.sin(ang), torch.cos(ang)], dim=1)


class Attention(torch.nn.Module):
    """fairseq's MultiheadAttention @ d666f145: bias=False (no in- or out-projection bias), separate
    q, k and v weights (three addmm; q's alpha is the scale), T x B x C activations, heads as
    strided views into torch.bmm / strided_batched_gemm, the second bmm written transposed."""

    def __init__(self):
        super().__init__()
        self.wq = torch.nn.Parameter(torch.empty(D, D).normal_(0, D**-0.5))
        self.wk = torch.nn.Parameter(torch.empty(D, D).normal_(0, D**-0.5))
        self.wv = torch.nn.Parameter(torch.empty(D, D).normal_(0, D**-0.5))
        self.out_proj = torch.nn.Linear(D, D, bias=False)
        self.drop = torch.nn.Dropout(DROPOUT)

    def forward(self, x, memory=None, mask=None):
        t, b, _ = x.shape
        kv = x if memory is None else memory
        s = kv.shape[0]
        dh = D // HEADS
        # addmm(..., W, alpha=scale): the scale rides in the GEMM; here a pass over the 1024 x 1024
        # weight instead of one over the activations.
        q = torch.matmul(x, (self.wq * dh**-0.5).t())
        k = torch.matmul(kv, self.wk.t())
        v = torch.matmul(kv, self.wv.t())
        q = q.reshape(t, b * HEADS, dh).transpose(0, 1)
        kt = k.reshape(s, b * HEADS, dh).permute(1, 2, 0)
        v = v.reshape(s, b * HEADS, dh).transpose(0, 1)
        scores = torch.bmm(q, kt)
        if mask is not None:
            scores = scores + mask
        p = self.drop(torch.softmax(scores, dim=-1))
        o = torch.bmm(p, v).transpose(0, 1).reshape(t, b, D)
        return self.out_proj(o)


class Layer(torch.nn.Module):
    def __init__(self, decoder):
        super().__init__()
        self.decoder = decoder
        self.self_norm = torch.nn.LayerNorm(D)
        self.self_attn = Attention()
        if decoder:
            self.enc_norm = torch.nn.LayerNorm(D)
            self.enc_attn = Attention()
        self.ffn_norm = torch.nn.LayerNorm(D)
        self.fc1 = torch.nn.Linear(D, FFN)
        self.fc2 = torch.nn.Linear(FFN, D)
        self.drop = torch.nn.Dropout(DROPOUT)

    def forward(self, x, memory=None, mask=None):
        x = x + self.drop(self.self_attn(self.self_norm(x), mask=mask))
        if self.decoder:
            x = x + self.drop(self.enc_attn(self.enc_norm(x), memory=memory))
        h = self.drop(torch.relu(self.fc1(self.ffn_norm(x))))
        return x + self.drop(self.fc2(h))


class TransformerBig(torch.nn.Module):
    def __init__(self, src_len, tgt_len):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, D, padding_idx=1)
        # Plain attributes, not buffers: the trace writes them as constants, so that with
        # export_params=False they are not graph inputs the import would count as weights.
        self.src_pos = sinusoid(src_len, D)
        self.tgt_pos = sinusoid(tgt_len, D)
        self.future = torch.triu(torch.full((tgt_len, tgt_len), float("-inf")), 1)
        self.encoder = torch.nn.ModuleList(Layer(False) for _ in range(LAYERS))
        self.decoder = torch.nn.ModuleList(Layer(True) for _ in range(LAYERS))
        self.enc_norm = torch.nn.LayerNorm(D)
        self.dec_norm = torch.nn.LayerNorm(D)
        self.drop = torch.nn.Dropout(DROPOUT)

    def forward(self, src_tokens, prev_output_tokens):
        # fairseq embeds B x T and transposes to T x B x C: a view (fuse_dropout_add is off in the
        # runs) that the first layer's FusedLayerNorm copies to contiguous, one copy per stack.
        x = self.drop(self.embed(src_tokens) * math.sqrt(D) + self.src_pos).transpose(0, 1)
        for layer in self.encoder:
            x = layer(x)
        memory = self.enc_norm(x)
        y = self.drop(self.embed(prev_output_tokens) * math.sqrt(D) + self.tgt_pos).transpose(0, 1)
        for layer in self.decoder:
            y = layer(y, memory=memory, mask=self.future)
        logits = torch.matmul(self.dec_norm(y).transpose(0, 1), self.embed.weight.t())
        return logits.reshape(-1, VOCAB)


def main():
    out = sys.argv[1]
    src_len = int(sys.argv[2]) if len(sys.argv) > 2 else 32
    tgt_len = int(sys.argv[3]) if len(sys.argv) > 3 else src_len
    torch.manual_seed(0)
    model = TransformerBig(src_len, tgt_len).train()
    src = torch.randint(4, VOCAB, (1, src_len))
    tgt = torch.randint(4, VOCAB, (1, tgt_len))
    dynamic = {"src_tokens": {0: "batch"}, "prev_output_tokens": {0: "batch"}}
    torch.onnx.export(model, (src, tgt), out, export_params=False, training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, input_names=["src_tokens", "prev_output_tokens"],
                      output_names=["logits"], dynamic_axes=dynamic, opset_version=17)
    print("transformer_wmt_en_de_big_t2t", sum(p.numel() for p in model.parameters()), flush=True)


if __name__ == "__main__":
    main()
