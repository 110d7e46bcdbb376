#!/usr/bin/env python3
"""A small PyTorch training job with ~5 s epochs for scripts/gpu-check.sh (needs torch + a GPU).

Writes the wall-clock start/end of each epoch to the JSON file given as argv[1] (truth)."""
import json
import sys
import time

try:
    import torch
    import torch.nn as nn
except ImportError:
    sys.exit("train_small.py: PyTorch is not installed (pip install torch)")

if not torch.cuda.is_available():
    sys.exit("train_small.py: no CUDA device")

torch.manual_seed(0)
device = "cuda"
model = nn.Sequential(
    nn.Conv2d(3, 64, 3, padding=1), nn.ReLU(), nn.Conv2d(64, 128, 3, padding=1), nn.ReLU(),
    nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 10)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(256, 3, 64, 64, device=device)
y = torch.randint(0, 10, (256,), device=device)
epochs, iters = 6, 0

# Calibrate iterations so that one epoch takes about 5 s.
torch.cuda.synchronize()
t0 = time.time()
for _ in range(20):
    opt.zero_grad(); nn.functional.cross_entropy(model(x), y).backward(); opt.step()
torch.cuda.synchronize()
iters = max(10, int(5.0 / ((time.time() - t0) / 20)))

truth = {"iters_per_epoch": iters, "epochs": []}
time.sleep(2)  # idle gap before training, as in the shared traces
for e in range(epochs):
    start = time.time()
    for _ in range(iters):
        opt.zero_grad(); nn.functional.cross_entropy(model(x), y).backward(); opt.step()
    torch.cuda.synchronize()
    time.sleep(0.3)  # a short "validation" dip marks the boundary
    truth["epochs"].append({"start": start, "end": time.time()})
    print(f"epoch {e}: {time.time() - start:.2f} s", flush=True)
truth["mean_epoch_s"] = sum(x["end"] - x["start"] for x in truth["epochs"]) / epochs
if len(sys.argv) > 1:
    json.dump(truth, open(sys.argv[1], "w"), indent=1)
