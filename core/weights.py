"""A safetensors file's tensors as float32 numpy arrays, read without torch.

The pipeline's own process compares each policy before and after RL for its report (the largest weight change);
loading torch for that cost each real run's pipeline process ~2.5 CPU-s on 2 cores, where every other figure it
reports is read from JSON. safetensors' own numpy reader refuses bfloat16 (numpy has no such type), the dtype GPU
runs save in; a bfloat16 is a float32's upper 16 bits, so it is widened here by a shift. The format: an 8-byte
little-endian header length, a JSON header (each tensor's dtype, shape and byte offsets after the header), the data.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

_DTYPES = {
    "F64": np.float64,
    "F32": np.float32,
    "F16": np.float16,
    "I64": np.int64,
    "I32": np.int32,
    "I16": np.int16,
    "I8": np.int8,
    "U8": np.uint8,
    "BOOL": np.bool_,
    "BF16": np.uint16,  # widened to float32 below
}


class SafetensorsArrays:
    """The tensors of one file, each read on demand as float32 (``keys()``, ``shape(key)``, ``[key]``)."""

    def __init__(self, path: Path):
        with open(path, "rb") as fh:
            size = int.from_bytes(fh.read(8), "little")
            header = json.loads(fh.read(size))
        header.pop("__metadata__", None)
        self.path, self.header = path, header
        self.data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + size)

    def keys(self) -> list[str]:
        return list(self.header)

    def shape(self, key: str) -> tuple[int, ...]:
        return tuple(self.header[key]["shape"])

    def __getitem__(self, key: str) -> np.ndarray:
        entry = self.header[key]
        if entry["dtype"] not in _DTYPES:
            raise ValueError(f"{self.path}: {key}: dtype {entry['dtype']} is not read here")
        start, end = entry["data_offsets"]
        raw = self.data[start:end].view(_DTYPES[entry["dtype"]]).reshape(entry["shape"])
        if entry["dtype"] == "BF16":
            return (raw.astype(np.uint32) << 16).view(np.float32)
        return raw.astype(np.float32)


def largest_change(before: SafetensorsArrays, after: SafetensorsArrays) -> float:
    """max |after - before| over the tensors both hold with the same shape (0 when none)."""
    worst = 0.0
    for key in sorted(set(before.keys()) & set(after.keys())):
        if before.shape(key) == after.shape(key):
            worst = max(worst, float(np.abs(after[key] - before[key]).max(initial=0.0)))
    return worst
