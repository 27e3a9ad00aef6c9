#!/usr/bin/env python3
"""Exact ground truth for scripts/device-check.sh: the K nearest base rows of every query by squared
L2, computed in float64, written as .ivecs (a row a query, nearest first) for `bench compare --gt`.

Why: `bench compare` otherwise scores recall against its own float64 brute force, one JavaScript
thread (about 0.6 us per pair on the 2-core dev machine: about 1.6 hours at n = 1e6, nq = 1e4). The
benchmark recomputes the true float64 distances of these ids itself and sorts them
(bench/exact.ts scoresOfIds), so only the set of ids matters, not their order or our rounding.

On CUDA through torch when torch sees a GPU (float64 GEMM: seconds at 1e6 x 1e4 x 128 on an H200),
else numpy on the CPU (fine for the small local runs; minutes at full size). GT_BACKEND=numpy or
torch forces one (torch then must see a GPU).
usage: [GT_BACKEND=auto|torch|numpy] python3 scripts/device-gt.py BASE.npy QUERY.npy K OUT.ivecs
"""
import os
import sys
import time

import numpy as np


def main() -> None:
    if len(sys.argv) != 5 or not sys.argv[3].isdigit() or int(sys.argv[3]) < 1:
        sys.exit("usage: python3 scripts/device-gt.py BASE.npy QUERY.npy K OUT.ivecs (K an integer >= 1)")
    base_path, query_path, k, out_path = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    want = os.environ.get("GT_BACKEND", "auto")
    if want not in ("auto", "torch", "numpy"):
        sys.exit(f"device-gt: GT_BACKEND must be auto, torch or numpy; got {want!r}")
    xb = np.load(base_path)
    xq = np.load(query_path)
    if xb.ndim != 2 or xq.ndim != 2 or xb.shape[1] != xq.shape[1]:
        sys.exit(f"device-gt: base {base_path} is {xb.shape} and queries {query_path} are {xq.shape}: need two 2-D arrays of the same width")
    n, nq = xb.shape[0], xq.shape[0]
    if k > n:
        sys.exit(f"device-gt: K = {k} is more than the {n} base rows")
    t0 = time.perf_counter()
    on_gpu = False
    if want != "numpy":
        try:
            import torch
            on_gpu = torch.cuda.is_available()
        except ImportError:
            pass
        if want == "torch" and not on_gpu:
            sys.exit("device-gt: GT_BACKEND=torch, but torch is missing or sees no CUDA GPU")
    if on_gpu:
        ids, how = gt_torch(torch, xb, xq, k), f"torch {torch.__version__} float64 on {torch.cuda.get_device_name()}"
    else:
        ids, how = gt_numpy(xb, xq, k), f"numpy float64 on the CPU ({'GT_BACKEND=numpy' if want == 'numpy' else 'no CUDA torch'})"
    # .ivecs: each row is its length (int32) followed by the ids (int32).
    rows = np.empty((nq, k + 1), dtype="<i4")
    rows[:, 0] = k
    rows[:, 1:] = ids
    rows.tofile(out_path)
    print(f"device-gt: top {k} of {nq} queries over {n} rows by {how} in {time.perf_counter() - t0:.1f} s -> {out_path}", flush=True)


def gt_torch(torch, xb, xq, k):
    dev = torch.device("cuda")
    b = torch.from_numpy(xb).to(dev, torch.float64)
    q = torch.from_numpy(xq).to(dev, torch.float64)
    bn = (b * b).sum(1)
    out = []
    # 1024 queries a block: a 1024 x n float64 score matrix is 8 GB at n = 1e6.
    for s in range(0, q.shape[0], 1024):
        # ||q||^2 is the same for a whole row: leaving it out changes no ranking.
        score = bn[None, :] - 2.0 * (q[s:s + 1024] @ b.T)
        out.append(torch.topk(score, k, dim=1, largest=False).indices.to(torch.int32).cpu())
    torch.cuda.synchronize()
    return torch.cat(out).numpy()


def gt_numpy(xb, xq, k):
    n = xb.shape[0]
    b = xb.astype(np.float64)
    bn = (b * b).sum(1)
    q = xq.astype(np.float64)
    # Blocks whose score matrix stays near 1 GB.
    step = max(1, (1 << 27) // n)
    out = np.empty((q.shape[0], k), dtype=np.int64)
    for s in range(0, q.shape[0], step):
        score = bn[None, :] - 2.0 * (q[s:s + step] @ b.T)
        part = np.argpartition(score, k - 1, axis=1)[:, :k] if k < n else np.tile(np.arange(n), (score.shape[0], 1))
        order = np.argsort(np.take_along_axis(score, part, axis=1), axis=1)
        out[s:s + step] = np.take_along_axis(part, order, axis=1)
    return out


if __name__ == "__main__":
    main()
