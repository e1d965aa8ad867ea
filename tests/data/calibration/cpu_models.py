# The two small models of gen_cpu_trace.py and gen_ddp_trace.py, with their batches.
import torch, torch.nn as nn


def cnn():
    return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(32 * 8 * 8, 10))


class Lm(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(1000, 64); self.lstm = nn.LSTM(64, 128, batch_first=True)
        self.out = nn.Linear(128, 1000)
    def forward(self, t):
        h, _ = self.lstm(self.emb(t)); return self.out(h)


def batch_and_loss(kind, model, batch=None):
    """The batch (drawn now, from torch's generator) and the step's loss function; `batch`
    replaces the default batch size (CNN 16 images, LSTM 8 sequences)."""
    if kind == "cnn":
        b = batch or 16
        x = torch.randn(b, 3, 32, 32); y = torch.randint(0, 10, (b,))
        return lambda: nn.functional.cross_entropy(model(x), y)
    b = batch or 8
    x = torch.randint(0, 1000, (b, 20)); y = torch.randint(0, 1000, (b, 20))
    return lambda: nn.functional.cross_entropy(model(x).reshape(-1, 1000), y.reshape(-1))
