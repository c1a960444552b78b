"""A plain training script that reports its metrics with `from trainconsole.trainers import report`.

    trainconsole run --script examples/scripts/report_train.py -- --epochs 5
    python examples/scripts/report_train.py --epochs 5        # the same, report() does nothing

scikit-learn's bundled 8x8 digits (offline), a small MLP, one CPU or GPU. `report` takes tensors as they
are (no `.item()` per step): trainconsole turns them into floats ~10 times a second.
"""

import argparse

import torch
from sklearn.datasets import load_digits
from torch import nn

from trainconsole.trainers import report


def data(device: torch.device) -> tuple[torch.Tensor, ...]:
    digits = load_digits()
    x = torch.tensor(digits.data, dtype=torch.float32, device=device) / 16.0
    y = torch.tensor(digits.target, device=device)
    perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(0)).to(device)
    split = int(0.8 * len(y))
    return x[perm[:split]], y[perm[:split]], x[perm[split:]], y[perm[split:]]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.1)
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    x_train, y_train, x_val, y_val = data(device)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    step = 0
    for epoch in range(1, args.epochs + 1):
        model.train()
        for i in range(0, len(y_train), args.batch_size):
            batch = slice(i, i + args.batch_size)
            loss = nn.functional.cross_entropy(model(x_train[batch]), y_train[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
            report(step=step, epoch=epoch, loss=loss)
        model.eval()
        with torch.no_grad():
            logits = model(x_val)
            val_loss = nn.functional.cross_entropy(logits, y_val)
            val_acc = (logits.argmax(1) == y_val).float().mean()
        report(epoch=epoch, val_loss=val_loss, val_acc=val_acc)
        print(f"epoch {epoch}: val_acc {val_acc.item():.3f}")


if __name__ == "__main__":
    main()
