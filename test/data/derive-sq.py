#!/usr/bin/env python3
"""Reference data for the scalar quantiser (src/codecs/scalar-quantizer.ts), made by Faiss 1.7.3.

    /usr/bin/python3 test/data/derive-sq.py

writes test/data/sq/faiss-sq-1.7.3.json and its line in test/data/SHA256SUMS (other lines are kept).
Run by hand, never by the tests: they read only the JSON, so they pass where Faiss is absent.

What it holds (every array little-endian, base64, with its dtype and shape; see README.md):
- inputs: `xt` (200 x 13 float32, the training set), `xs` (extra rows for SQ8/SQ4: out of the
  trained range, far out, exactly at the ends, other values in the constant columns, and values
  at and just below the code boundaries), `xh` (rows for SQfp16: rounding ties,
  half subnormals, the largest finite halves, float32 subnormals, +-0, random values at many scales);
- for each of SQ8 (QT_8bit), SQ4 (QT_4bit), SQfp16 (QT_fp16), RS_minmax as Faiss's default:
  `trained` (`sq.trained`: vmin[d] then vdiff[d]; empty for fp16), `codes` (`sq.compute_codes` of
  [xt; xs] for SQ8/SQ4, of xh for fp16), `decoded` (`sq.decode` of those codes) and, for SQ8/SQ4,
  `all_codes` / `all_decoded`: every code value (0..255, 0..15) in every dimension, decoded.

The inputs come from a seeded NumPy generator, but the tests read them from the JSON, so nothing
here has to be reproduced outside Python.
"""
import base64
import hashlib
import json
import os
import sys

import faiss
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_REL = 'sq/faiss-sq-1.7.3.json'
SEED = 15
N, D = 200, 13
FLT_MAX = np.finfo(np.float32).max

if faiss.__version__ != '1.7.3':
    sys.exit(f'derive-sq.py: needs Faiss 1.7.3; this is {faiss.__version__}')

f32 = np.float32
rng = np.random.default_rng(SEED)


def training_set():
    x = np.empty((N, D), dtype=f32)
    x[:, 0] = rng.uniform(-1, 1, N)
    x[:, 1] = 0.5 + 1e-3 * rng.standard_normal(N)
    x[:, 2] = 1e3 * rng.standard_normal(N)
    x[:, 3] = rng.integers(0, 256, N)             # SIFT-like integers
    x[:3, 3] = [7, 0, 255]
    x[:, 4] = 1000 + 1e-3 * rng.uniform(0, 1, N)  # x - vmin cancels
    x[:, 5] = 3.25                                # constant: vdiff 0
    x[:, 6] = -0.0                                # constant -0: Faiss decodes +0
    x[:, 7] = rng.uniform(0, 1, N)                # vmin 0, vdiff 1 exactly (the boundary rows)
    x[:2, 7] = [1, 0]
    x[:, 8] = rng.uniform(-1, 1, N) * f32(1e-39)  # float32 subnormals (vdiff subnormal)
    x[::7, 8] = 0.0
    x[3::7, 8] = -0.0
    x[:, 9] = rng.uniform(-1, 1, N) * f32(1e32)     # FLT_MAX - vmin overflows to inf
    x[:, 10] = -rng.uniform(2, 3, N)
    x[:, 11] = np.where(rng.uniform(0, 1, N) < 0.5, f32(1), np.nextafter(f32(1), f32(2)))  # vdiff 1 ulp
    x[:2, 11] = [1, np.nextafter(f32(1), f32(2))]
    x[:, 12] = rng.standard_normal(N)
    return x


def boundary_values():
    """Values in [0, 1] (column 7: vmin 0, vdiff 1, so xi = x) at and just below k/255 and k/15.

    Faiss truncates (int)(255 * x) with a float32 product for SQ8 and (int)(x * 15.0) with a
    float64 one for SQ4. Both equal floor(exact product) for every float32 x in [0, 1] (checked
    over all of them when this script was written: float32(k/255) and float32(k/15) always round
    up, so no float below k/m comes within half an ulp of it), so the difference cannot show; these
    rows check the truncation at the code boundaries.
    """
    vals = []
    for m in (255, 15):
        for k in range(0, m + 1, 17 if m == 255 else 1):
            x = f32(k / m)
            vals += [x, np.nextafter(x, f32(0))]
    return np.array(vals, dtype=f32)


def sq_extra(xt):
    vmin, vmax = xt.min(0), xt.max(0)
    span = vmax - vmin
    rows = [
        vmin, vmax,                                     # exactly at the ends
        vmin - np.maximum(span, 1) * f32(0.25),         # below
        vmax + np.maximum(span, 1) * f32(0.25),         # above
        np.full(D, -FLT_MAX, dtype=f32), np.full(D, FLT_MAX, dtype=f32),  # x - vmin overflows (column 9)
        np.full(D, -1e30, dtype=f32), np.full(D, 1e30, dtype=f32),
    ]
    for _ in range(8):                                  # constant columns given other values
        r = xt[rng.integers(0, N)].copy()
        r[5] = rng.uniform(-10, 10)
        r[6] = rng.uniform(-1, 1)
        rows.append(r)
    for v in boundary_values():
        r = xt[rng.integers(0, N)].copy()
        r[7] = v
        rows.append(r)
    return np.array(rows, dtype=f32)


def fp16_rows():
    ties = [1 + (2 * k + 1) * 2.0 ** -11 for k in range(8)]             # normal ties, odd and even
    ties += [(k + 0.5) * 2.0 ** -24 for k in range(8)]                 # subnormal half ties
    ties += [2.0 ** -25, 2.0 ** -26, 3 * 2.0 ** -26, 2.0 ** -14, 2.0 ** -14 - 2.0 ** -25]
    big = [65504, 65505, 65519, float(np.nextafter(f32(65520), f32(0))), 2048 + 1, 2048 + 3, 4097]
    tiny = [1e-40, -1e-40, 1e-45, 0.0, -0.0, 6e-8, -6e-8, 3e-8]
    special = np.array(ties + big + tiny, dtype=f32)
    special = np.concatenate([special, -special])
    scales = f32(10.0) ** rng.integers(-9, 5, 40 * D).astype(f32)
    rand = (rng.standard_normal(40 * D).astype(f32) * scales).astype(f32)
    flat = np.concatenate([special, rand])
    flat = np.concatenate([flat, np.zeros((-len(flat)) % D, dtype=f32)])
    return flat.reshape(-1, D)


def arr(a, dtype):
    a = np.ascontiguousarray(a, dtype=dtype)
    return {'dtype': a.dtype.str, 'shape': list(a.shape), 'base64': base64.b64encode(a.tobytes()).decode()}


def main():
    xt = training_set()
    xs = sq_extra(xt)
    xh = fp16_rows()
    assert np.isfinite(xt).all() and np.isfinite(xs).all() and np.isfinite(xh).all()
    assert (np.abs(xh) < 65520).all()
    kinds = {}
    for name, qtype, levels in [('SQ8', faiss.ScalarQuantizer.QT_8bit, 256),
                                ('SQ4', faiss.ScalarQuantizer.QT_4bit, 16),
                                ('SQfp16', faiss.ScalarQuantizer.QT_fp16, 0)]:
        sq = faiss.ScalarQuantizer(D, qtype)
        assert sq.rangestat == faiss.ScalarQuantizer.RS_minmax and sq.rangestat_arg == 0
        sq.train(xt)
        x = np.vstack([xt, xs]) if levels else xh
        codes = sq.compute_codes(x)
        k = {
            'qtype': {256: 'QT_8bit', 16: 'QT_4bit', 0: 'QT_fp16'}[levels],
            'code_size': int(sq.code_size),
            'trained': arr(faiss.vector_to_array(sq.trained), '<f4'),
            'encoded': 'xt+xs' if levels else 'xh',
            'codes': arr(codes, '|u1'),
            'decoded': arr(sq.decode(codes), '<f4'),
        }
        if levels:
            c = np.repeat(np.arange(levels), D).reshape(levels, D)
            if levels == 16:  # two dimensions a byte, dimension 2i in the low nibble
                c = np.hstack([c, np.zeros((levels, 1), dtype=c.dtype)])
                c = c[:, 0::2] | (c[:, 1::2] << 4)
            all_codes = c.astype(np.uint8)
            assert all_codes.shape[1] == sq.code_size
            k['all_codes'] = arr(all_codes, '|u1')
            k['all_decoded'] = arr(sq.decode(all_codes), '<f4')
        kinds[name] = k
    fixture = {
        'generator': 'test/data/derive-sq.py',
        'faiss': faiss.__version__,
        'numpy': np.__version__,
        'seed': SEED,
        'd': D,
        'inputs': {'xt': arr(xt, '<f4'), 'xs': arr(xs, '<f4'), 'xh': arr(xh, '<f4')},
        'kinds': kinds,
    }
    text = json.dumps(fixture, indent=1) + '\n'
    path = os.path.join(HERE, OUT_REL)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write(text)
    sums_path = os.path.join(HERE, 'SHA256SUMS')
    with open(sums_path) as f:
        lines = [l for l in f.read().splitlines() if l.strip() and not l.endswith('  ' + OUT_REL)]
    lines.append(f'{hashlib.sha256(text.encode()).hexdigest()}  {OUT_REL}')
    with open(sums_path, 'w') as f:
        f.write('\n'.join(lines) + '\n')
    print(f'{OUT_REL}: {len(text)} bytes; [xt; xs] {N + len(xs)} x {D}, xh {len(xh)} x {D}')


if __name__ == '__main__':
    main()
