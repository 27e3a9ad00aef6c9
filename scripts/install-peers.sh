#!/usr/bin/env bash
# Installs the optional peers of `webgpu-knn bench compare`; none of them is needed to build, test
# or use webgpu-knn, and CI does not install them.
#   - Faiss 1.7.3 for Python: Debian's python3-faiss (with python3-numpy), into the system Python
#     (/usr/bin/python3; set WEBGPU_KNN_PYTHON to use another Python that imports faiss), and
#     OpenBLAS: Faiss's flat search and k-means call BLAS, and Debian's default libblas3 is the
#     reference implementation, about 10x slower here (the report names the BLAS in use).
#   - hnswlib-node and usearch (npm, native): into peers/node_modules, pinned by peers/package.json
#     and peers/package-lock.json, so the project's own lockfile stays free of them.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "faiss: apt-get install python3-faiss libopenblas0-pthread"
  apt-get install -y -q python3-faiss libopenblas0-pthread >/dev/null
elif /usr/bin/python3 -c 'import faiss' 2>/dev/null; then
  echo "faiss: importable in /usr/bin/python3 (not root: OpenBLAS not checked)"
else
  echo "faiss: not installed; as root on Debian/Ubuntu: apt-get install python3-faiss libopenblas0-pthread (or set WEBGPU_KNN_PYTHON)" >&2
fi

echo "hnswlib-node, usearch: npm ci in peers/ (hnswlib-node compiles; needs g++ and make)"
npm ci --prefix peers --no-audit --no-fund
node -e "for (const m of ['hnswlib-node', 'usearch']) require(require.resolve(m, { paths: ['peers'] }))" \
  && echo "peers: ready"
