#!/usr/bin/env python3
"""Faiss peer for `webgpu-knn bench compare` (bench/peers.ts runs it; not meant to be run by hand).

argv[1]: a job JSON written by bench/peers.ts: n, nq, d, metric ('l2' or 'ip'; cosine arrives as
'ip' on normalised rows), k, batch, warmup, repeats, ivf (null or nlist, niter, seed, nprobes),
factory (null, or a list of description, niter, seed, configs: each param, nprobe, kFactor), and
dir, which holds base.f32 (n * d float32) and query.f32 (nq * d).

Without factory: builds IndexFlat, and IndexIVFFlat (its quantizer an IndexFlatL2, as webgpu-knn
trains centroids by L2 for every metric) trained on the base with the same number of k-means
iterations. With factory: each string through faiss.index_factory, trained on the base (an IVF's
coarse k-means with the given niter and seed), then searched with each config: nprobe on the IVF
inside (faiss.extract_index_ivf, unwrapping an ,RFlat IndexRefine first), k_factor on an IndexRefine.
Times searches exactly as bench/measure.ts does: `warmup` untimed passes, then `repeats` timed
passes over the queries in batches of `batch`, each batch timed on its own.

stdout: one JSON line per configuration (index, param, threads, buildSeconds, indexBytes, batchMs,
passSeconds, labels: the name of an int32 file of the last pass's nq * k labels, in dir), or for a
factory string Faiss could not build or search, one line of index and error.
stderr: progress.
"""
import json
import os
import sys
import time

import faiss
import numpy as np


def log(line):
    print(line, file=sys.stderr, flush=True)


def measure(index, xq, k, job):
    nq = xq.shape[0]
    labels = np.full((nq, k), -1, dtype=np.int64)
    batch_ms, pass_seconds = [], []
    for p in range(job["warmup"] + job["repeats"]):
        pass_ms = 0.0
        for q0 in range(0, nq, job["batch"]):
            block = xq[q0:q0 + job["batch"]]
            t = time.perf_counter()
            _, got = index.search(block, k)
            ms = (time.perf_counter() - t) * 1000
            if p >= job["warmup"]:
                batch_ms.append(ms)
                pass_ms += ms
                labels[q0:q0 + len(block)] = got
        if p >= job["warmup"]:
            pass_seconds.append(pass_ms / 1000)
    return labels, batch_ms, pass_seconds


def serialized_bytes(index):
    return int(faiss.serialize_index(index).size)


def report(job, name, index, param, build_seconds, index_bytes, xq):
    k = job["k"]
    labels, batch_ms, pass_seconds = measure(index, xq, k, job)
    path = "labels-%s-%s.i32" % (name.replace(",", "_"), param.replace("=", ""))
    labels.astype(np.int32).tofile(os.path.join(job["dir"], path))
    print(json.dumps({
        "index": name,
        "param": param,
        "threads": faiss.omp_get_max_threads(),
        "buildSeconds": build_seconds,
        "indexBytes": index_bytes,
        "batchMs": batch_ms,
        "passSeconds": pass_seconds,
        "labels": path,
    }), flush=True)


def ivf_of(index):
    """The IndexIVF inside a factory-built index (inside an ,RFlat IndexRefine too), or None."""
    if hasattr(index, "k_factor"):
        index = faiss.downcast_index(index.base_index)
    try:
        return faiss.extract_index_ivf(index)
    except RuntimeError:
        return None


def run_factory(job, f, xb, xq, metric):
    d = xb.shape[1]
    t = time.perf_counter()
    index = faiss.index_factory(d, f["description"], metric)
    ivf = ivf_of(index)
    if ivf is not None:
        ivf.cp.niter = f["niter"]
        ivf.cp.seed = f["seed"]
    if not index.is_trained:
        index.train(xb)
    index.add(xb)
    build = time.perf_counter() - t
    log("%s: trained and added in %.2f s" % (f["description"], build))
    size = serialized_bytes(index)
    for c in f["configs"]:
        if c["nprobe"] is not None:
            if ivf is None:
                raise RuntimeError("nprobe given but %s has no IVF inside" % f["description"])
            ivf.nprobe = c["nprobe"]
        if c["kFactor"] is not None:
            if not hasattr(index, "k_factor"):
                raise RuntimeError("kFactor given but %s is no IndexRefine" % f["description"])
            index.k_factor = c["kFactor"]
        report(job, f["description"], index, c["param"], build, size, xq)
        log("%s %s: done" % (f["description"], c["param"]))


def main():
    job = json.load(open(sys.argv[1]))
    n, nq, d = job["n"], job["nq"], job["d"]
    xb = np.fromfile(os.path.join(job["dir"], "base.f32"), dtype=np.float32).reshape(n, d)
    xq = np.fromfile(os.path.join(job["dir"], "query.f32"), dtype=np.float32).reshape(nq, d)
    metric = faiss.METRIC_L2 if job["metric"] == "l2" else faiss.METRIC_INNER_PRODUCT

    if job.get("factory"):
        for f in job["factory"]:
            try:
                run_factory(job, f, xb, xq, metric)
            except Exception as e:  # one string Faiss rejects does not stop the others
                log("%s: %s" % (f["description"], e))
                print(json.dumps({"index": f["description"], "error": str(e).strip().split("\n")[-1]}), flush=True)
        return

    t = time.perf_counter()
    flat = faiss.IndexFlat(d, metric)
    flat.add(xb)
    log("Flat: built in %.2f s" % (time.perf_counter() - t))
    report(job, "Flat", flat, "-", time.perf_counter() - t, serialized_bytes(flat), xq)

    ivf = job["ivf"]
    if ivf:
        t = time.perf_counter()
        quantizer = faiss.IndexFlatL2(d)
        index = faiss.IndexIVFFlat(quantizer, d, ivf["nlist"], metric)
        index.cp.niter = ivf["niter"]
        index.cp.seed = ivf["seed"]
        index.train(xb)
        index.add(xb)
        build = time.perf_counter() - t
        log("IVF%d,Flat: trained and added in %.2f s" % (ivf["nlist"], build))
        size = serialized_bytes(index)
        for nprobe in ivf["nprobes"]:
            index.nprobe = nprobe
            report(job, "IVF%d,Flat" % ivf["nlist"], index, "nprobe=%d" % nprobe, build, size, xq)
            log("IVF%d,Flat nprobe=%d: done" % (ivf["nlist"], nprobe))


if __name__ == "__main__":
    main()
