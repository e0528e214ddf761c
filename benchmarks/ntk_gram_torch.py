#!/usr/bin/python3
"""NTK Gram of a 784-128-128-1 ReLU MLP (no bias) on the first N MNIST digits of data/mnist
(standardised per image, as bench_ntk_gram.c), with PyTorch's per-example Jacobians:
functorch vmap(jacrev) in torch 1.13 (torch.func in torch >= 2), else an autograd loop.
The Gram is Σ over parameter tensors of J Jᵀ with J the flattened per-example Jacobian.

Usage: /usr/bin/python3 benchmarks/ntk_gram_torch.py [N ...]   (default 500 2000), run from the
repository root after scripts/fetch_mnist.sh."""
import os
import sys
import time

import numpy as np
import torch

try:
    from torch.func import functional_call, jacrev, vmap
except ImportError:
    try:
        from functorch import jacrev, vmap
        from torch.nn.utils.stateless import functional_call
    except ImportError:
        jacrev = vmap = functional_call = None


def load(n):
    path = os.path.join("data", "mnist", "train-images-idx3-ubyte")
    with open(path, "rb") as f:
        raw = f.read()
    x = np.frombuffer(raw, dtype=np.uint8, offset=16)[: n * 784].reshape(n, 784) / 255.0
    x = (x - x.mean(1, keepdims=True)) / x.std(1, keepdims=True)
    return torch.tensor(x, dtype=torch.float64)


def model():
    torch.manual_seed(1)
    net = torch.nn.Sequential(torch.nn.Linear(784, 128, bias=False), torch.nn.ReLU(),
                              torch.nn.Linear(128, 128, bias=False), torch.nn.ReLU(),
                              torch.nn.Linear(128, 1, bias=False)).double()
    return net


def gram_vmap(net, x):
    params = {k: v.detach() for k, v in net.named_parameters()}

    def f(p, xi):
        return functional_call(net, p, (xi.unsqueeze(0),)).squeeze()
    jac = vmap(jacrev(f), (None, 0))(params, x)
    K = torch.zeros(x.shape[0], x.shape[0], dtype=x.dtype)
    for j in jac.values():
        j = j.reshape(x.shape[0], -1)
        K += j @ j.T
    return K


def gram_loop(net, x):
    rows = []
    for i in range(x.shape[0]):
        net.zero_grad()
        net(x[i:i + 1]).sum().backward()
        rows.append(torch.cat([p.grad.reshape(-1) for p in net.parameters()]))
    J = torch.stack(rows)
    return J @ J.T


def main():
    sizes = [int(a) for a in sys.argv[1:]] or [500, 2000]
    net = model()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s)")
    print(f"{'N':>5}  {'method':>14}  {'seconds':>9}")
    for n in sizes:
        x = load(n)
        methods = [("vmap(jacrev)", gram_vmap)] if vmap else []
        methods.append(("autograd loop", gram_loop))
        ref = None
        for name, fn in methods:
            t0 = time.perf_counter()
            K = fn(net, x)
            dt = time.perf_counter() - t0
            if ref is None:
                ref = K
            diff = (K - ref).abs().max().item() / ref.abs().max().item()
            print(f"{n:5d}  {name:>14}  {dt:9.3f}   (rel. diff to first: {diff:.1e})")


if __name__ == "__main__":
    main()
