"""Exports NVIDIA DeepLearningExamples' NCF (NeuMF) to ONNX for training-step graphs.

Run with Debian's interpreter (torch 1.13):
    /usr/bin/python3 ncf_neumf.py OUT.onnx
Prints the parameter count (torch's sum(p.numel())). Batch axis dynamic (`--batch N` sets it).

The model is DeepLearningExamples' PyTorch/Recommendation/NCF (neumf.py and ncf.py @
05ee9863290facde91057a15ce75b71ca7dca02d), re-written here with the same shapes and op sequence
at ncf.py's defaults (--factors 64, --layers 256 256 128 64, --dropout 0.5) on ML-20m
(138,493 users and 26,744 items, the README's dataset):
- four nn.Embedding tables (dense gradients: sparse=False): user and item of width 64 for the
  matrix-factorisation branch, user and item of width 128 (layers[0] // 2) for the MLP branch;
- MF branch: the product of the user and item rows; MLP branch: the two rows concatenated, then
  Linear 256->256, 256->128, 128->64, each followed by ReLU and dropout 0.5;
- the final Linear(64 + 64 -> 1) over the two branches concatenated;
- the loss as ncf.py computes it: BCEWithLogitsLoss(reduction='none') on the [B, 1] logits, then
  torch.mean over the flattened [B] (here the flattened per-sample loss is the graph's output and
  the import takes its mean).
Not modelled: the epoch's data preparation on the device (negative sampling, randperm, gathers;
dataloading.py), once an epoch, outside the step.
"""
import sys

import torch

USERS = 138493
ITEMS = 26744
FACTORS = 64
LAYERS = [256, 256, 128, 64]
DROPOUT = 0.5


class NeuMF(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.mf_user_embed = torch.nn.Embedding(USERS, FACTORS)
        self.mf_item_embed = torch.nn.Embedding(ITEMS, FACTORS)
        self.mlp_user_embed = torch.nn.Embedding(USERS, LAYERS[0] // 2)
        self.mlp_item_embed = torch.nn.Embedding(ITEMS, LAYERS[0] // 2)
        self.mlp = torch.nn.ModuleList(
            torch.nn.Linear(LAYERS[i - 1], LAYERS[i]) for i in range(1, len(LAYERS)))
        self.final = torch.nn.Linear(LAYERS[-1] + FACTORS, 1)

    def forward(self, label, user, item):
        xmf = self.mf_user_embed(user) * self.mf_item_embed(item)
        xmlp = torch.cat((self.mlp_user_embed(user), self.mlp_item_embed(item)), dim=1)
        for layer in self.mlp:
            xmlp = torch.nn.functional.dropout(torch.relu(layer(xmlp)), p=DROPOUT, training=True)
        logits = self.final(torch.cat((xmf, xmlp), dim=1))
        loss = torch.nn.functional.binary_cross_entropy_with_logits(
            logits, label.view(-1, 1), reduction="none")
        return loss.view(-1)


def main():
    out = sys.argv[1]
    torch.manual_seed(0)
    model = NeuMF().train()
    batch = 1024
    user = torch.randint(0, USERS, (batch,))
    item = torch.randint(0, ITEMS, (batch,))
    label = torch.rand(batch)
    dynamic = {"user": {0: "batch"}, "item": {0: "batch"}, "label": {0: "batch"},
               "loss": {0: "batch"}}
    # label first: the import takes a float graph input as data (not a parameter) when it leads
    # the inputs (models/onnx_import.cpp, find_data_inputs).
    torch.onnx.export(model, (label, user, item), out, export_params=False,
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                      input_names=["label", "user", "item"], output_names=["loss"],
                      dynamic_axes=dynamic, opset_version=17)
    print(sum(p.numel() for p in model.parameters()))


if __name__ == "__main__":
    main()
