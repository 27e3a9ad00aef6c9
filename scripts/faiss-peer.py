#!/usr/bin/env python3
"""Faiss peer for `webgpu-knn bench compare` (bench/peers.ts runs it; not meant to be run by hand).

argv[1]: a job JSON written by bench/peers.ts: n, nq, d, metric ('l2' or 'ip'; cosine arrives as
'ip' on normalised rows), k, batch, ivf (null or nlist, niter, seed, nprobes), factory (null, or a
list of description, niter, seed, optionally efConstruction (an HNSW string's), configs: each
param, nprobe, kFactor, optionally efSearch (an HNSW string's)), and dir, which holds
base.f32 (n * d float32) and query.f32 (nq * d).

Without factory: builds IndexFlat, and IndexIVFFlat (its quantizer an IndexFlat of the metric, so
that an inner-product IVF trains by spherical k-means assigned by inner product, as Faiss does and
as webgpu-knn does) trained on the base with the same number of k-means iterations. With factory:
each string through faiss.index_factory, trained on the base (an IVF's coarse k-means with the
given niter and seed; where the entry gives `spherical`, cp.spherical, and when it is false for
inner product an L2 clustering index, so that the centroids are plain L2 k-means), then searched
with each config: nprobe on the IVF inside (faiss.extract_index_ivf, unwrapping an ,RFlat
IndexRefine first), k_factor on an IndexRefine, efSearch on an HNSW's graph. A factory entry may instead carry `codes` (a PQ string, with or without
,RFlat): the paths of a trained codebook (float32, M * 2^nbits * d / M, Faiss's layout) and of
the n codes (code_size bytes each); the IndexPQ then holds exactly those, untrained by Faiss, and
an IndexRefineFlat the base rows, so that both engines search the same codes.

It builds everything first, then runs passes when asked, so that bench/measure.ts can interleave
them with the other engines' passes. A pass searches the queries exactly as bench/measure.ts does:
(when asked to warm) the last full batch once untimed, then all in batches of `batch`, each batch
timed on its own.

stdout, one JSON line each: per configuration built, its config number, index, param, threads,
buildSeconds and indexBytes (or, for a factory string Faiss could not build, index and error);
then {"ready": true}. After that, each line read from stdin, {"pass": N, "warm": true|false,
"batch": B}, runs one pass of config N in batches of B (absent: the job's batch) and answers pass (N), batchMs and labels: the name of an int32 file (in dir)
of the pass's nq * k labels; or pass and error, when the search failed. It exits when stdin closes.
stderr: progress.
"""
import json
import os
import sys
import time

import faiss
import numpy as np


# Objects Faiss points to but does not own (SWIG keeps no reference): kept alive for the run.
KEEP = []


def log(line):
    print(line, file=sys.stderr, flush=True)


def run_pass(index, xq, k, batch, warm):
    """One pass over the queries in batches of `batch`, with `warm` after one untimed search of the
    last full batch (as bench/measure.ts's timePass): each batch's milliseconds and the labels."""
    nq = xq.shape[0]
    labels = np.full((nq, k), -1, dtype=np.int64)
    batch_ms = []
    if warm:
        index.search(xq[max(0, nq - batch):], k)
    for q0 in range(0, nq, batch):
        block = xq[q0:q0 + batch]
        t = time.perf_counter()
        _, got = index.search(block, k)
        batch_ms.append((time.perf_counter() - t) * 1000)
        labels[q0:q0 + len(block)] = got
    return labels, batch_ms


def serialized_bytes(index):
    return int(faiss.serialize_index(index).size)


def last_line(e):
    """An exception's message as one line (Faiss's C++ errors span several)."""
    return str(e).strip().split("\n")[-1]


class Configs:
    """The configurations built so far: each an index and `apply`, which gives it the configuration's
    settings before a pass."""

    def __init__(self):
        self.runs = []

    def add(self, name, index, param, build_seconds, index_bytes, apply):
        print(json.dumps({
            "config": len(self.runs),
            "index": name,
            "param": param,
            "threads": faiss.omp_get_max_threads(),
            "buildSeconds": build_seconds,
            "indexBytes": index_bytes,
        }), flush=True)
        self.runs.append((index, apply))


def ivf_of(index):
    """The IndexIVF inside a factory-built index (inside an ,RFlat IndexRefine too), or None."""
    if hasattr(index, "k_factor"):
        index = faiss.downcast_index(index.base_index)
    try:
        return faiss.extract_index_ivf(index)
    except RuntimeError:
        return None


def build_factory(configs, f, xb, metric):
    d = xb.shape[1]
    t = time.perf_counter()
    index = faiss.index_factory(d, f["description"], metric)
    ivf = ivf_of(index)
    if ivf is not None:
        ivf.cp.niter = f["niter"]
        ivf.cp.seed = f["seed"]
        if f.get("spherical") is not None:
            ivf.cp.spherical = f["spherical"]
        if f.get("spherical") is False and metric == faiss.METRIC_INNER_PRODUCT:
            # Plain L2 k-means, as webgpu-knn's spherical: false: Faiss would otherwise assign
            # by its inner-product quantizer while training.
            ivf.clustering_index = faiss.IndexFlatL2(d)
            KEEP.append(ivf.clustering_index)
    if f.get("efConstruction") is not None:
        if not hasattr(index, "hnsw"):
            raise RuntimeError("efConstruction given but %s is no HNSW" % f["description"])
        index.hnsw.efConstruction = f["efConstruction"]
    if f.get("codes"):
        given_codes(index, f["codes"], xb)
    else:
        if not index.is_trained:
            index.train(xb)
        index.add(xb)
    build = time.perf_counter() - t
    log("%s: trained and added in %.2f s" % (f["description"], build))
    size = serialized_bytes(index)
    for c in f["configs"]:
        if c["nprobe"] is not None and ivf is None:
            raise RuntimeError("nprobe given but %s has no IVF inside" % f["description"])
        if c["kFactor"] is not None and not hasattr(index, "k_factor"):
            raise RuntimeError("kFactor given but %s is no IndexRefine" % f["description"])
        if c.get("efSearch") is not None and not hasattr(index, "hnsw"):
            raise RuntimeError("efSearch given but %s is no HNSW" % f["description"])

    for c in f["configs"]:
        def apply(c=c):
            if c["nprobe"] is not None:
                ivf.nprobe = c["nprobe"]
            if c["kFactor"] is not None:
                index.k_factor = c["kFactor"]
            if c.get("efSearch") is not None:
                index.hnsw.efSearch = c["efSearch"]
        configs.add(f["description"], index, c["param"], build, size, apply)


def given_codes(index, codes, xb):
    """Puts a trained codebook and the base's codes (files named by `codes`) into a factory-built
    IndexPQ, or the IndexPQ inside an IndexRefineFlat (whose refine index then takes the base rows)."""
    refine = index if hasattr(index, "k_factor") else None
    pq = faiss.downcast_index(refine.base_index) if refine else index
    if not isinstance(pq, faiss.IndexPQ):
        raise RuntimeError("codes are given for IndexPQ strings only; got %s" % type(pq).__name__)
    n = xb.shape[0]
    centroids = np.fromfile(codes["codebook"], dtype=np.float32)
    data = np.fromfile(codes["codes"], dtype=np.uint8)
    if centroids.size != pq.pq.centroids.size() or data.size != n * pq.code_size:
        raise RuntimeError("codes: %d codebook floats and %d code bytes; expected %d and %d"
                           % (centroids.size, data.size, pq.pq.centroids.size(), n * pq.code_size))
    faiss.copy_array_to_vector(centroids, pq.pq.centroids)
    faiss.copy_array_to_vector(data, pq.codes)
    pq.ntotal = n
    pq.is_trained = True
    if refine:
        refine.refine_index.add(xb)
        refine.ntotal = n
        refine.is_trained = True


def build_default(configs, job, xb, metric):
    d = xb.shape[1]
    t = time.perf_counter()
    flat = faiss.IndexFlat(d, metric)
    flat.add(xb)
    log("Flat: built in %.2f s" % (time.perf_counter() - t))
    configs.add("Flat", flat, "-", time.perf_counter() - t, serialized_bytes(flat), lambda: None)

    ivf = job["ivf"]
    if ivf:
        t = time.perf_counter()
        quantizer = faiss.IndexFlat(d, metric)
        index = faiss.IndexIVFFlat(quantizer, d, ivf["nlist"], metric)
        index.cp.niter = ivf["niter"]
        index.cp.seed = ivf["seed"]
        index.train(xb)
        index.add(xb)
        build = time.perf_counter() - t
        log("IVF%d,Flat: trained and added in %.2f s" % (ivf["nlist"], build))
        size = serialized_bytes(index)
        for nprobe in ivf["nprobes"]:
            def apply(nprobe=nprobe):
                index.nprobe = nprobe
            configs.add("IVF%d,Flat" % ivf["nlist"], index, "nprobe=%d" % nprobe, build, size, apply)


def main():
    job = json.load(open(sys.argv[1]))
    n, nq, d, k = job["n"], job["nq"], job["d"], job["k"]
    xb = np.fromfile(os.path.join(job["dir"], "base.f32"), dtype=np.float32).reshape(n, d)
    xq = np.fromfile(os.path.join(job["dir"], "query.f32"), dtype=np.float32).reshape(nq, d)
    metric = faiss.METRIC_L2 if job["metric"] == "l2" else faiss.METRIC_INNER_PRODUCT

    configs = Configs()
    if job.get("factory"):
        for f in job["factory"]:
            try:
                build_factory(configs, f, xb, metric)
            except Exception as e:  # one string Faiss rejects does not stop the others
                log("%s: %s" % (f["description"], e))
                print(json.dumps({"index": f["description"], "error": last_line(e)}), flush=True)
    else:
        build_default(configs, job, xb, metric)
    print(json.dumps({"ready": True}), flush=True)

    for line in sys.stdin:
        if not line.strip():
            continue
        ask = json.loads(line)
        i = ask["pass"]
        try:
            index, apply = configs.runs[i]
            apply()
            labels, batch_ms = run_pass(index, xq, k, ask.get("batch", job["batch"]), ask.get("warm", True))
            path = "labels-%d.i32" % i
            labels.astype(np.int32).tofile(os.path.join(job["dir"], path))
            print(json.dumps({"pass": i, "batchMs": batch_ms, "labels": path}), flush=True)
        except Exception as e:  # this configuration's pass fails, the others go on
            log("pass %d: %s" % (i, e))
            print(json.dumps({"pass": i, "error": last_line(e)}), flush=True)


if __name__ == "__main__":
    main()
