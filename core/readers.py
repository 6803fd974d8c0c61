"""Reading user files, once for every command: any failure is one ``UserInputError`` line naming the file and,
where there is one, the line (JSONL and text, 1-based) or row (Parquet and datasets, 0-based).

Pairs, problems, prompts, configs, generator lists, prompt templates and export metadata all come through
here, so a non-UTF-8 byte, a truncated ``.gz``, a folder where a file belongs or a file that does not parse
reads the same way whichever command met it. Import-light on purpose (no torch): bad input is refused in
a second, before any model or heavy library loads.
"""

from __future__ import annotations

import gzip
import json
import tomllib
import zlib
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from darling.core.errors import UserInputError

BOM = "\ufeff"  # Windows editors put it in front of UTF-8 files; json.loads refuses it


def one_line(text: object) -> str:
    """A library's message squeezed onto one line (many span several, with blank lines and tabs)."""
    return " ".join(str(text).split())


def _decode(raw: bytes, where: str, first: bool) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserInputError(
            f"{where}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at byte {exc.start + 1} of the line); "
            "save the file as UTF-8"
        ) from None
    return text.removeprefix(BOM) if first else text


def _open_error(path: Path, what: str, exc: OSError) -> UserInputError:
    if isinstance(exc, IsADirectoryError):
        return UserInputError(f"{path}: is a folder, expected a {what}")
    if isinstance(exc, FileNotFoundError):
        return UserInputError(f"{path}: no such {what}")
    return UserInputError(f"{path}: cannot read {what} ({exc.strerror or one_line(exc)})")


def iter_jsonl(path: Path) -> Iterator[tuple[str, Any]]:
    """``(where, record)`` per non-blank line of a ``.jsonl`` / ``.jsonl.gz`` file; ``where`` is ``path:line``.

    Lines are decoded one at a time, so a byte that is not UTF-8 is reported with its line; a ``.gz`` that
    ends early or is not gzip at all is reported with the last line read before the damage."""
    path = Path(path)
    lineno = 0
    compressed = path.name.endswith(".gz")
    try:
        with gzip.open(path, "rb") if compressed else path.open("rb") as fh:
            for lineno, raw in enumerate(fh, start=1):
                where = f"{path}:{lineno}"
                line = _decode(raw, where, first=lineno == 1)
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise UserInputError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from None
                yield where, record
    except gzip.BadGzipFile:
        raise UserInputError(f"{path}: not a gzip file (named .gz); compress it with gzip or drop the .gz") from None
    except (EOFError, zlib.error) as exc:
        # EOFError: the stream stops before gzip's end marker (a copy cut short); zlib.error: corrupt bytes.
        after = f"after line {lineno}" if lineno else "before the first line"
        raise UserInputError(f"{path}: truncated or corrupt gzip data {after} ({one_line(exc)})") from None
    except OSError as exc:
        raise _open_error(path, "JSONL file", exc) from None


def iter_rows(rows: Iterable[Mapping[str, Any]], name: str) -> Iterator[tuple[str, Any]]:
    """``(where, row)`` of an in-memory table; ``where`` is ``name: row i`` (0-based, as Parquet tools count)."""
    for i, row in enumerate(rows):
        yield f"{name}: row {i}", row


def parquet_files(path: Path) -> list[Path]:
    path = Path(path)
    return sorted(p for p in path.glob("*.parquet") if p.is_file()) if path.is_dir() else [path]


def iter_parquet(path: Path) -> Iterator[tuple[str, Any]]:
    """``(where, row)`` of a ``.parquet`` file or every ``*.parquet`` shard of a folder, in name order."""
    import polars as pl

    for file in parquet_files(path):
        try:
            frame = pl.read_parquet(file)
        except Exception as exc:  # polars raises several types for a broken file
            raise UserInputError(f"{file}: cannot read Parquet ({exc.__class__.__name__}: {one_line(exc)})") from None
        yield from iter_rows(frame.iter_rows(named=True), str(file))


def iter_dataset(
    spec: str, prefer: tuple[str, ...] = ("test", "train"), split: str | None = None
) -> Iterator[tuple[str, Any]]:
    """Rows of a ``save_to_disk`` folder or a hub dataset ``owner/name[:split]`` (from the local cache).

    Without a split: the only split, else the first of ``prefer`` that exists, else an error naming the
    splits. ``split`` is the default split asked of the hub when the name carries none."""
    import datasets

    path = Path(spec)
    name, _, named_split = spec.partition(":") if not path.exists() else (spec, "", "")
    try:
        if path.is_dir():
            ds = datasets.load_from_disk(str(path))
        else:
            ds = datasets.load_dataset(name, split=named_split or split)
    except Exception as exc:  # network, missing or damaged dataset, unknown split: all fixable by the user
        reason = f"{exc.__class__.__name__}: {one_line(exc)}"
        raise UserInputError(f"{spec}: cannot load Hugging Face dataset ({reason})") from None
    if isinstance(ds, datasets.DatasetDict):
        splits = list(ds)
        chosen = splits[0] if len(splits) == 1 else next((s for s in prefer if s in ds), None)
        if chosen is None:
            raise UserInputError(f"{spec}: several splits ({', '.join(splits)}); name one as {name}:SPLIT")
        ds = ds[chosen]
    yield from iter_rows(ds, spec)


def read_text(path: Path, what: str) -> str:
    """A whole UTF-8 text file (a template, a config); ``what`` names it in errors ("prompt file")."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise _open_error(path, what, exc) from None
    try:
        return data.decode("utf-8").removeprefix(BOM)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise UserInputError(
            f"{path}:{line}: not UTF-8 text (byte 0x{data[exc.start]:02x}); save the {what} as UTF-8"
        ) from None


def read_structured(path: Path, what: str) -> Any:
    """A TOML (``.toml``), YAML (``.yaml``/``.yml``) or JSON (anything else) file, parsed."""
    path = Path(path)
    text = read_text(path, what)
    if path.suffix == ".toml":
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:  # its message carries "(at line L, column C)"
            raise UserInputError(f"{path}: not valid TOML ({one_line(exc)})") from None
    if path.suffix in (".yaml", ".yml"):
        import yaml

        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
            problem = getattr(exc, "problem", None) or one_line(exc)
            raise UserInputError(f"{where}: not valid YAML ({problem})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserInputError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg} at column {exc.colno})") from None
