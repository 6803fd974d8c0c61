"""The prompts of ``darling eval novelty``: a file, a dataset or a packaged set by name, each prompt with a stable id
(a reordered file keeps its ids, so stored generations stay keyed to their prompts)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from darling.core.errors import UserInputError
from darling.core.schemas import stable_id
from darling.datagen.problems import PACKAGED_PROMPT_SETS, packaged_problem_file, problem_records


@dataclass(frozen=True)
class NoveltyPrompt:
    prompt_id: str
    prompt: str
    category: str | None = None


# NoveltyBench's 100 curated prompts (MIT, evals/resources/NOVELTYBENCH-LICENSE), loadable by name.
PACKAGED_NOVELTY_PROMPTS = {
    "noveltybench-curated": Path(__file__).parent / "resources" / "noveltybench-curated.jsonl.gz"
}


def load_prompts(source: str | Path, limit: int | None = None) -> list[NoveltyPrompt]:
    """Prompts (field ``prompt``; ``id`` if present, else a content hash; optional ``category``) from a
    .jsonl[.gz] file, a .parquet file or folder, a ``save_to_disk`` folder, a hub name ``owner/name[:split]`` or
    a packaged prompt set by name (``noveltybench-curated``, ``naming-heldout``, ``naming-train``,
    ``items-heldout``, ``items-train``, ``world-heldout``, ``world-train``, ...: ``PACKAGED_PROMPT_SETS``)."""

    spec = str(source)
    if limit is not None and limit < 1:
        raise UserInputError(f"--limit must be at least 1, got {limit}")
    path = Path(spec)
    if spec in PACKAGED_NOVELTY_PROMPTS and not path.exists():
        path = PACKAGED_NOVELTY_PROMPTS[spec]
        spec = str(path)
    elif spec in PACKAGED_PROMPT_SETS and not path.exists():
        path = packaged_problem_file(spec) or path
        spec = str(path)
    if not path.exists() and not ("/" in spec and not spec.startswith((".", "/")) and not path.suffix):
        raise UserInputError(f"{spec}: prompt file not found")
    records, _ = problem_records(spec)
    prompts: list[NoveltyPrompt] = []
    seen: dict[str, str] = {}
    for where, record in records:
        if not isinstance(record, dict):
            raise UserInputError(f"{where}: expected an object with field 'prompt', got {type(record).__name__}")
        text = record.get("prompt")
        if not isinstance(text, str) or not text.strip():
            problem = "missing field 'prompt'" if text is None else "field 'prompt' must be a non-empty string"
            raise UserInputError(f"{where}: {problem}")
        raw_id, category = record.get("id"), record.get("category")
        if raw_id is not None and not isinstance(raw_id, str | int):
            raise UserInputError(f"{where}: field 'id' must be a string or integer, got {type(raw_id).__name__}")
        if category is not None and not isinstance(category, str):
            raise UserInputError(f"{where}: field 'category' must be a string, got {type(category).__name__}")
        prompt_id = str(raw_id) if raw_id not in (None, "") else stable_id(text)  # reordering keeps ids
        if prompt_id in seen:
            raise UserInputError(f"{where}: duplicate prompt id '{prompt_id}' (also at {seen[prompt_id]})")
        seen[prompt_id] = where
        prompts.append(NoveltyPrompt(prompt_id, text, category))
        if limit is not None and len(prompts) >= limit:
            break
    if not prompts:
        raise UserInputError(f"{spec}: no prompts found")
    return prompts
