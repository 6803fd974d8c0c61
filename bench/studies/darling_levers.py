"""DARLING against GRPO on 2 CPU cores: which settings make DARLING's diversity term act, and what it does then.

A *lever* is a set of ``rl-train`` settings (``KEY=VALUE``) for two runs that differ only in their reward: DARLING
(quality x diversity) and GRPO (``--no-diversity``), side by side, from one shared start policy (the base policy, or a
GRPO warm-up of ``--warmup-steps`` steps, warmed once per seed and reused by every lever). Per lever and seed it
measures, with the commands a user runs (``darling rl-train``, ``eval novelty``, ``eval compare``, ``eval study``):

- **acted**: the share of DARLING's groups whose advantages its diversity term changed (its training log,
  ``darling/groups_changed``), over all steps and over the first four;
- **distinct answers** (exact) and **distinct** (eval partition) per prompt, and **quality**, of the start policy,
  DARLING and GRPO on the training prompts (what the reward targets) and on the held-out prompts, DARLING minus GRPO
  paired over prompts with a bootstrap interval, and pooled over seeds (hierarchical bootstrap) by ``eval study``;
- **wall time** of the two RL runs;
- with ``--arm METHOD[=KEY=VALUE,...]``, more arms of ``rl-train --method`` (``darling-ngram``, ``entropy``,
  ``passk``, ``darling-add``) trained from the same start with the same seed and settings, each compared with GRPO
  and with DARLING on the same figures, and its own acted share (``groups_changed``; for ``entropy`` TRL's mean token
  entropy times its coefficient, the bonus it added to the loss). ``--arm NAME=method=METHOD,KEY=VALUE`` names an arm
  (its folder ``rl-NAME``, its policy NAME), so one method runs at several settings, e.g. two entropy coefficients.

Every command resumes, so a rerun continues where a killed one stopped (an RL run from its last checkpoint, or from its
start when it saved none). Writes ``OUT/results.jsonl`` (a line per lever and seed), ``OUT/study-<lever>-<prompts>/``
and ``OUT/levers.md``.

Disk: the bench reads only each run's ``final`` policy and ``log_history.json``; a checkpoint serves only to resume a
killed run. So each RL run saves one checkpoint, at its end (``--save-steps N``: every N steps, for long runs worth
resuming), keeps at most one (``save_total_limit=1``) and deletes it once ``final`` is saved. A SmolLM2 checkpoint
with its optimizer state is 1.6 GB and a final policy 0.54 GB: a run needs ~2.2 GB at its end (a second checkpoint
for a moment while a newer one is written with ``--save-steps``) and keeps 0.54 GB; a lever and seed (two runs side by
side) ~4.3 GB at its peak and ~1.1 GB after, a warm-up 0.54 GB per seed. A lever's ``KEY=VALUE`` (and
``--warmup-set``) reaches ``rl-train`` as ``--set`` after the bench's own defaults (checkpointing, ``threads``), so it
overrides them; the settings the bench derives from its options (``output``, ``policy``, ``classifier``,
``method``, ``seed``, ``max_steps``) are refused in a lever.

    .venv/bin/python bench/studies/darling_levers.py --classifier runs/pipeline/classifier --out runs/levers \\
        --seeds 1,2,3 --warmup-steps 16 --lever t10=temperature=1.0 --lever t07=temperature=0.7
    .venv/bin/python bench/studies/darling_levers.py --classifier runs/pipeline/classifier --out runs/levers \
        --lever p4=per_device_train_batch_size=32,temperature=0.7 \
        --arm darling-ngram --arm passk --arm entropy=entropy_coef=0.02 \
        --arm entropy-005=method=entropy,entropy_coef=0.005
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from darling.core.training_log import (
    ADVANTAGE_CHANGE,
    DISTINCT_ANSWERS,
    GROUPS_CHANGED,
    QUALITY_ADVANTAGE,
    REWARD,
    TRL_ENTROPY,
    TRL_ENTROPY_COEF,
    WOULD_CHANGE,
)
from darling.evals.prompt_metrics import has_every_metric
from darling.rl.methods import METHOD_NAMES, OTHER_ARMS

DARLING = str(Path(sys.executable).parent / "darling")
RL = ["rl-train", "--preset", "naming"]
# rl-train settings the bench derives from its own options: a lever (or --warmup-set) may not set them too (a flag
# beats --set in rl-train, so the lever's value would be dropped without a word).
OWNED = {
    "output": "--out",
    "policy": "--warmup-steps (the shared start policy)",
    "classifier": "--classifier",
    "method": "the bench runs darling, grpo and each --arm; an --arm may name its method",
    "seed": "--seeds",
    "max_steps": "--steps / --warmup-steps",
}
PROMPTS = {"train": "naming-train", "heldout": "naming-heldout"}
METRICS = ("distinct_answers", "distinct", "quality")


def run(argv: list[str], log: Path) -> float:
    """One darling command, its output to ``log``; its wall seconds. A failure stops the bench (rerun resumes)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with log.open("ab") as sink:
        code = subprocess.call([DARLING, *argv], stdout=sink, stderr=subprocess.STDOUT)
    if code:
        sys.exit(f"failed ({code}): darling {' '.join(argv)}; see {log}")
    return time.perf_counter() - start


def side_by_side(commands: list[tuple[list[str], Path]]) -> float:
    """The commands at once (one core each); wall seconds until the last ends."""
    start = time.perf_counter()
    procs = []
    for argv, log in commands:
        log.parent.mkdir(parents=True, exist_ok=True)
        procs.append((subprocess.Popen([DARLING, *argv], stdout=log.open("ab"), stderr=subprocess.STDOUT), argv, log))
    for proc, argv, log in procs:
        if proc.wait():
            sys.exit(f"failed ({proc.returncode}): darling {' '.join(argv)}; see {log}")
    return time.perf_counter() - start


def settings_flags(settings: dict[str, str]) -> list[str]:
    return [w for key, value in settings.items() for w in ("--set", f"{key}={value}")]


def owned_settings(settings: dict[str, str]) -> list[str]:
    """The keys of ``settings`` that the bench sets itself (``OWNED``), as field names."""
    return sorted({key.strip().replace("-", "_") for key in settings} & OWNED.keys())


def rl_argv(out: Path, max_steps: int, save_steps: int, threads: int, settings: dict[str, str]) -> list[str]:
    """An ``rl-train`` command line of the bench: its output and step count as flags, then the bench's defaults
    (checkpointing, threads) and the user's ``settings`` as one ``--set`` list, the user's last (they win)."""
    defaults = {
        "save_steps": str(save_steps or max_steps),  # 0: one checkpoint, at the end (only a resume would read it)
        "save_total_limit": "1",  # the newest is all a resume needs (a SmolLM2 checkpoint is 1.6 GB)
        "prune_checkpoints": "true",  # deleted once final is saved: the bench reads final and log_history.json
        "threads": str(threads),
    }
    merged = {**defaults, **{key.strip().replace("-", "_"): value for key, value in settings.items()}}
    return [*RL, "--output", str(out), "--max-steps", str(max_steps), *settings_flags(merged)]


def resume_flag(output: Path) -> list[str]:
    return ["--resume"] if any(output.glob("checkpoint-*")) and not (output / "final").exists() else []


def warm_up(args, seed: int) -> str:
    """The shared start policy of one seed: the base policy, or a GRPO warm-up of ``--warmup-steps`` steps."""
    if not args.warmup_steps:
        return "smollm2"
    out = args.out / f"warmup-{args.warmup_steps}-s{seed}"
    if not (out / "final").exists():
        argv = rl_argv(out, args.warmup_steps, args.save_steps, 2, args.warmup_set)  # alone: both cores
        argv += ["--method", "grpo", "--classifier", str(args.classifier), "--seed", str(seed)]
        seconds = run([*argv, *resume_flag(out)], out.with_suffix(".log"))
        (out / "seconds.txt").write_text(f"{seconds:.1f}\n")
    return str(out / "final")


def evaluate(args, name: str, model: str, folder: Path, seed: int, prompts: str) -> tuple[list[str], Path]:
    limit = args.train_limit if prompts == "train" else args.heldout_limit
    argv = ["eval", "novelty", "--output", str(folder), "--model", model, "--classifier", str(args.classifier)]
    argv += [
        "--prompts",
        PROMPTS[prompts],
        "--limit",
        str(limit),
        "--k",
        "8",
        "--temperature",
        str(args.eval_temperature),
    ]
    argv += ["--max-tokens", "24", "--seed", str(seed), "--engine", "hf", "--threads", "1"]
    return argv, folder.with_suffix(".log")


def evaluations(args, jobs: list[tuple[str, str, Path, int, str]]) -> None:
    """Eval novelty of every (name, model, folder, seed, prompts) not yet done, two at a time."""
    todo = [evaluate(args, *job) for job in jobs if not has_every_metric(job[2])]
    for k in range(0, len(todo), 2):
        side_by_side(todo[k : k + 2])


def compare(args, folders: dict[str, Path], training: dict[str, Path], out: Path, strict: bool) -> dict:
    """eval compare of the three policies, with the quality the runs trained on."""
    argv = ["eval", "compare", "--output", str(out), "--quality", "relevant-short-answer", "--seed", "0"]
    argv += ["--strict-length"] if strict else []
    argv += [w for name, f in folders.items() for w in ("--novelty", f"{name}={f}")]
    argv += [w for name, f in training.items() for w in ("--training", f"{name}={f}")]
    argv += ["--pairs", "darling:grpo", "--pairs", "darling:start", "--pairs", "grpo:start"]
    argv += [w for arm in args.arms for w in ("--pairs", f"{arm}:grpo", "--pairs", f"darling:{arm}")]
    run(argv, out.with_suffix(".log"))
    return json.loads((out / "compare.json").read_text())


def acted(log_history: Path) -> dict[str, float]:
    steps = [h for h in json.loads(log_history.read_text()) if REWARD.key in h]
    shares = [h.get(GROUPS_CHANGED.key, 0.0) for h in steps]
    change = [h.get(ADVANTAGE_CHANGE.key, 0.0) for h in steps]
    scale = [h.get(QUALITY_ADVANTAGE.key, 0.0) for h in steps]
    return {
        "acted": statistics.mean(shares),
        "acted_first4": statistics.mean(shares[:4]),
        "advantage_change": statistics.mean(change),
        "quality_advantage": statistics.mean(scale),
        "distinct_answers_last4": statistics.mean([h.get(DISTINCT_ANSWERS.key, 0) for h in steps[-4:]]),
    }


def rl_command(args, out: Path, start: str, seed: int, method: str, settings: dict[str, str]):
    argv = rl_argv(out, args.steps, args.save_steps, 1, settings)  # two side by side: a core each
    argv += ["--policy", start, "--classifier", str(args.classifier), "--seed", str(seed)]
    return [*argv, "--method", method, *resume_flag(out)], out.with_suffix(".log")


def train_arms(args, root: Path, start: str, seed: int, settings: dict[str, str]) -> dict[str, Path]:
    """Each --arm's run (``root/rl-<arm>``) not yet done, two at a time; each writes its wall seconds beside it (two
    runs sharing the two cores)."""
    runs = {arm: root / f"rl-{arm}" for arm in args.arms}
    todo = [arm for arm, out in runs.items() if not (out / "final").exists()]
    for k in range(0, len(todo), 2):
        chunk = todo[k : k + 2]
        commands = [
            rl_command(args, runs[a], start, seed, args.arm_methods[a], {**settings, **args.arms[a]}) for a in chunk
        ]
        seconds = side_by_side(commands)
        for arm in chunk:
            runs[arm].with_name(f"rl-{arm}-seconds.txt").write_text(f"{seconds:.1f}\n")
    return runs


def arm_acted(method: str, log_history: Path) -> dict[str, float]:
    """What an arm did to training: the entropy bonus it added to the loss (TRL's mean token entropy x coefficient),
    or the share of groups whose advantages differ from GRPO's."""
    if method != "entropy":
        return acted(log_history)
    entropy, coef = TRL_ENTROPY.key, TRL_ENTROPY_COEF.key
    steps = [h for h in json.loads(log_history.read_text()) if entropy in h]
    return {
        "entropy": statistics.mean(h[entropy] for h in steps),
        "entropy_bonus": statistics.mean(h[entropy] * h.get(coef, 0.0) for h in steps),
    }


def one(args, lever: str, settings: dict[str, str], seed: int) -> dict:
    """One lever, one seed: the two runs (and each --arm's), their evaluations and comparisons."""
    start = warm_up(args, seed)
    root = args.out / lever / f"s{seed}"
    runs = {"darling": root / "rl", "grpo": root / "rl-grpo"}
    commands = [rl_command(args, out, start, seed, name, settings) for name, out in runs.items()]
    commands = [c for c, out in zip(commands, runs.values(), strict=True) if not (out / "final").exists()]
    if commands:
        (root / "rl-seconds.txt").parent.mkdir(parents=True, exist_ok=True)
        (root / "rl-seconds.txt").write_text(f"{side_by_side(commands):.1f}\n")
    arms = train_arms(args, root, start, seed, settings)
    runs = {**runs, **arms}
    models = {"start": start, **{name: str(out / "final") for name, out in runs.items()}}
    start_evals = args.out / f"start-{args.warmup_steps}-s{seed}"  # shared by every lever of this seed
    jobs = []
    for prompts in PROMPTS:
        for name, model in models.items():
            folder = (start_evals if name == "start" else root) / f"eval-{prompts}" / name
            jobs.append((name, model, folder, seed, prompts))
    evaluations(args, jobs)
    result = {"lever": lever, "settings": settings, "seed": seed, "warmup_steps": args.warmup_steps}
    result["rl_seconds"] = float((root / "rl-seconds.txt").read_text())
    result["darling_log"] = acted(runs["darling"] / "log_history.json")
    result["grpo_would_change"] = statistics.mean(
        h.get(WOULD_CHANGE.key, 0.0)
        for h in json.loads((runs["grpo"] / "log_history.json").read_text())
        if REWARD.key in h
    )
    result["arms"] = {
        arm: {
            **arm_acted(args.arm_methods[arm], out / "log_history.json"),
            "rl_seconds": float(out.with_name(f"rl-{arm}-seconds.txt").read_text()),
        }
        for arm, out in arms.items()
    }
    for prompts in PROMPTS:
        folders = {n: (start_evals if n == "start" else root) / f"eval-{prompts}" / n for n in models}
        strict = settings.get("strict_length", "false").lower() == "true"
        training = runs if prompts == "train" else {}
        figures = compare(args, folders, training, root / f"compare-{prompts}", strict)["novelty"]
        result[prompts] = {
            "policies": figures["policies"],
            **{pair: {m: figures["differences"][pair][m] for m in METRICS} for pair in pairs(args)},
            "compare": str(root / f"compare-{prompts}"),
            "drift": drift(root, prompts),
        }
        for pair in pairs(args):
            for diff in result[prompts][pair].values():
                diff.pop("values", None)
    return result


def pairs(args) -> list[str]:
    """The differences the bench reports and pools: DARLING minus GRPO, then each --arm minus GRPO and DARLING minus
    each --arm."""
    return ["darling - grpo", *(p for arm in args.arms for p in (f"{arm} - grpo", f"darling - {arm}"))]


def short_answers(folder: Path, max_words: int = 4) -> dict[str, tuple[int, float]]:
    """Per prompt: distinct normalised answers among those of at most ``max_words`` words, and the share of longer
    answers. A policy that drifts to long answers gains exact-match distinct answers without naming anything new;
    this count does not move with that drift."""
    import polars as pl

    from darling.core.quality import normalised_answer

    frame = pl.read_parquet(folder / "scores.parquet").sort("prompt_id", "sample_index")
    out = {}
    for (prompt_id,), group in frame.group_by("prompt_id", maintain_order=True):
        texts = [t.strip() for t in group["response"].to_list()]
        short = {normalised_answer(t) for t in texts if 0 < len(t.split()) <= max_words}
        out[str(prompt_id)] = (len(short), sum(len(t.split()) > max_words for t in texts) / len(texts))
    return out


def drift(root: Path, prompts: str) -> dict[str, float]:
    """DARLING minus GRPO in distinct short answers, and each run's share of long answers (``short_answers``)."""
    darling, grpo = (short_answers(root / f"eval-{prompts}" / name) for name in ("darling", "grpo"))
    ids = sorted(darling)
    return {
        "distinct_short_answers": statistics.mean(darling[i][0] - grpo[i][0] for i in ids),
        "long_darling": statistics.mean(darling[i][1] for i in ids),
        "long_grpo": statistics.mean(grpo[i][1] for i in ids),
    }


def study_folder(out: Path, lever: str, prompts: str, pair: str) -> Path:
    """Where ``eval study`` pools ``pair`` (DARLING minus GRPO keeps the folder it always had)."""
    suffix = "" if pair == "darling - grpo" else "-" + pair.replace(" - ", "-minus-")
    return out / f"study-{lever}-{prompts}{suffix}"


def pool(args, lever: str, results: list[dict]) -> dict:
    """Each pair pooled over the seeds by ``eval study``: {pair: {prompts: {metric: pooled}}}."""
    pooled: dict[str, dict] = {}
    for pair in pairs(args):
        for prompts in PROMPTS:
            folders = [f"{r['seed']}={r[prompts]['compare']}" for r in results]
            out = study_folder(args.out, lever, prompts, pair)
            argv = ["eval", "study", "--output", str(out), *[w for f in folders for w in ("--compare", f)]]
            run([*argv, "--pair", pair], out.with_suffix(".log"))
            metrics = json.loads((out / "study.json").read_text())["metrics"]
            pooled.setdefault(pair, {})[prompts] = {m: metrics[f"novelty/{m}"]["pooled"] for m in METRICS}
    return pooled


def cell(d: dict) -> str:
    lo, hi = d["interval"]
    return f"{d['mean']:+.2f} [{lo:+.2f}, {hi:+.2f}]"


def render(results: list[dict], pooled: dict[str, dict]) -> str:
    lines = [
        "# DARLING minus GRPO by lever (bench/studies/darling_levers.py)",
        "",
        "| lever | seed | acted (all / first 4 steps) | GRPO would | RL s | train: distinct answers | train: distinct "
        "| train: quality | held-out: distinct answers | held-out: distinct | held-out: quality |",
        "| --- | --- | --- | --- | ---: |" + " ---: |" * 6,
    ]
    for r in results:
        log = r["darling_log"]
        cells = [cell(r[p]["darling - grpo"][m]) for p in PROMPTS for m in METRICS]
        lines.append(
            f"| {r['lever']} | {r['seed']} | {log['acted']:.0%} / {log['acted_first4']:.0%} | "
            f"{r['grpo_would_change']:.0%} | {r['rl_seconds']:.0f} | " + " | ".join(cells) + " |"
        )
    for lever, figures in pooled.items():
        if "darling - grpo" in figures:
            cells = [cell(figures["darling - grpo"][p][m]) for p in PROMPTS for m in METRICS]
            lines.append(f"| **{lever}** | pooled | | | | " + " | ".join(cells) + " |")
    lines += arm_lines(results, pooled)
    lines += [
        "",
        "Answers over 4 words (share, DARLING / GRPO) and DARLING minus GRPO in distinct answers among those of at "
        "most 4 words (the drift a longer answer adds to exact-match distinct left out):",
        "",
        "| lever | seed | train: long | train: distinct short answers | held-out: long | held-out: distinct short |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        cells = []
        for p in PROMPTS:
            d = r[p].get("drift")
            cells += (
                [f"{d['long_darling']:.2f} / {d['long_grpo']:.2f}", f"{d['distinct_short_answers']:+.2f}"]
                if d
                else ["–", "–"]
            )
        lines.append(f"| {r['lever']} | {r['seed']} | " + " | ".join(cells) + " |")
    return "\n".join([*lines, ""])


def arm_acted_cell(log: dict) -> str:
    if "entropy_bonus" in log:
        return f"bonus {log['entropy_bonus']:.3f} (entropy {log['entropy']:.2f})"
    return f"{log['acted']:.0%} / {log['acted_first4']:.0%}"


def arm_lines(results: list[dict], pooled: dict[str, dict]) -> list[str]:
    """Each --arm against GRPO and against DARLING, per seed and pooled: one row per (arm, pair, seed)."""
    arms = list(dict.fromkeys(arm for r in results for arm in r.get("arms", {})))
    if not arms:
        return []
    lines = [
        "",
        "Other arms, each from the same start with the same seed and settings: its difference with GRPO and DARLING's "
        "with it. Acted: the share of groups whose advantages the arm changed (all / first 4 steps); for entropy the "
        "mean bonus it added to the loss (coefficient x TRL's mean token entropy).",
        "",
        "| lever | arm | pair | seed | acted | RL s | train: distinct answers | train: distinct | train: quality "
        "| held-out: distinct answers | held-out: distinct | held-out: quality |",
        "| --- | --- | --- | --- | --- | ---: |" + " ---: |" * 6,
    ]
    for arm in arms:
        for pair in (f"{arm} - grpo", f"darling - {arm}"):
            for r in (r for r in results if arm in r.get("arms", {})):
                log = r["arms"][arm]
                cells = [cell(r[p][pair][m]) for p in PROMPTS for m in METRICS]
                lines.append(
                    f"| {r['lever']} | {arm} | {pair} | {r['seed']} | {arm_acted_cell(log)} | "
                    f"{log['rl_seconds']:.0f} | " + " | ".join(cells) + " |"
                )
            for lever, figures in pooled.items():
                if pair in figures:
                    cells = [cell(figures[pair][p][m]) for p in PROMPTS for m in METRICS]
                    lines.append(f"| **{lever}** | {arm} | {pair} | pooled | | | " + " | ".join(cells) + " |")
    return lines


def parse_settings(text: str) -> tuple[str, dict[str, str]]:
    """``NAME=KEY=VALUE,KEY=VALUE`` -> (name, settings); a malformed one is a ValueError."""
    name, _, rest = text.partition("=")
    items = [item for item in rest.split(",") if item]
    if not name or any("=" not in item for item in items):
        raise ValueError(f"--lever {text!r}: expected NAME=KEY=VALUE,KEY=VALUE")
    return name, dict(item.split("=", 1) for item in items)


def arm_method(name: str, settings: dict[str, str]) -> str:
    """The rl-train method of ``--arm NAME``: its ``method=`` (taken out of its settings) or NAME itself; a
    ValueError names what is wrong."""
    method = settings.pop("method", name)
    if method not in OTHER_ARMS:
        raise ValueError(f"--arm {name}: expected a method, one of {', '.join(OTHER_ARMS)} (or method=METHOD)")
    if name in ("darling", "grpo", "start") or any(c in name for c in ":/= "):
        raise ValueError(f"--arm {name}: an arm's name may not be darling, grpo or start, nor hold ':', '/' or '='")
    if name in METHOD_NAMES and name != method:  # a policy named after another method would misread every table
        raise ValueError(f"--arm {name}: that name is another method's; name this {method} arm otherwise")
    return method


def report_only(out: Path) -> None:
    """levers.md from every (lever, seed) in results.jsonl (the last line of each), drift recomputed from the
    evaluations, pooled figures from the study folders present."""
    results = {}
    lines = out / "results.jsonl"
    if not lines.is_file():
        sys.exit(f"--report-only: {lines} does not exist (a run of the bench with --out {out} writes it)")
    for line in lines.read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            results[(r["lever"], r["seed"])] = r
    if not results:
        sys.exit(f"--report-only: {lines} holds no result yet")
    for (lever, seed), r in results.items():
        for prompts in PROMPTS:
            root = out / lever / f"s{seed}"
            if all((root / f"eval-{prompts}" / name / "scores.parquet").exists() for name in ("darling", "grpo")):
                r[prompts]["drift"] = drift(root, prompts)  # else the line's own (or none: the table shows -)
    pooled: dict[str, dict] = {}
    for lever in dict.fromkeys(lever for lever, _ in results):
        arms = dict.fromkeys(arm for (name, _), r in results.items() if name == lever for arm in r.get("arms", {}))
        for pair in pairs(argparse.Namespace(arms=arms)):
            studies = {p: study_folder(out, lever, p, pair) / "study.json" for p in PROMPTS}
            if all(path.exists() for path in studies.values()):
                metrics = {p: json.loads(path.read_text())["metrics"] for p, path in studies.items()}
                figures = {p: {m: metrics[p][f"novelty/{m}"]["pooled"] for m in METRICS} for p in PROMPTS}
                pooled.setdefault(lever, {})[pair] = figures
    (out / "levers.md").write_text(render(list(results.values()), pooled))
    print(render(list(results.values()), pooled))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--classifier", type=Path, help="A darling classifier export (needed unless --report-only).")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--lever", action="append", default=[], help="NAME=KEY=VALUE,KEY=VALUE (rl-train settings).")
    parser.add_argument(
        "--arm",
        action="append",
        default=[],
        help="METHOD or METHOD=KEY=VALUE,...: another rl-train --method trained beside darling and grpo (its own "
        "settings after the lever's), e.g. darling-ngram, passk, entropy=entropy_coef=0.02; NAME=method=METHOD,... "
        "names the arm, e.g. entropy-005=method=entropy,entropy_coef=0.005.",
    )
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--steps", type=int, default=16, help="Steps of each branch run.")
    parser.add_argument("--warmup-steps", type=int, default=16, help="GRPO steps before the branch; 0: from the base.")
    parser.add_argument("--warmup-set", action="append", default=[], help="KEY=VALUE for the warm-up run.")
    parser.add_argument(
        "--save-steps",
        type=int,
        default=0,
        help="Checkpoint every N steps (to resume a killed run from there); 0 (default): once, at the end of each run. "
        "Each run keeps at most one checkpoint (1.6 GB for SmolLM2), deleted once its final policy (0.54 GB) is "
        "saved: ~4.3 GB per lever and seed at the peak, ~1.1 GB after. A lever's save_steps=N overrides it.",
    )
    parser.add_argument("--eval-temperature", type=float, default=0.7)
    parser.add_argument("--train-limit", type=int, default=48)
    parser.add_argument("--heldout-limit", type=int, default=24)
    parser.add_argument(
        "--report-only", action="store_true", help="Rebuild OUT/levers.md from OUT/results.jsonl; run nothing."
    )
    args = parser.parse_args()
    if args.report_only:
        report_only(args.out)
        return
    if args.classifier is None:
        parser.error("--classifier is required (unless --report-only)")
    if args.save_steps < 0:
        parser.error("--save-steps must be 0 (once, at the end) or a step count")
    if any("=" not in item for item in args.warmup_set):
        parser.error("--warmup-set expects KEY=VALUE")
    args.warmup_set = dict(item.split("=", 1) for item in args.warmup_set)
    try:
        levers = dict(parse_settings(text) for text in args.lever or ["default="])
        args.arms = dict(parse_settings(text) for text in args.arm)
    except ValueError as error:
        parser.error(str(error))
    try:
        args.arm_methods = {name: arm_method(name, settings) for name, settings in args.arms.items()}
    except ValueError as error:
        parser.error(str(error))
    arm_settings = ((f"--arm {k}", v) for k, v in args.arms.items())
    for name, settings in [
        ("--warmup-set", args.warmup_set),
        *((f"--lever {k}", v) for k, v in levers.items()),
        *arm_settings,
    ]:
        for key in owned_settings(settings):
            parser.error(f"{name}: {key} is the bench's to set ({OWNED[key]}), not a lever's")
    seeds = [int(s) for s in args.seeds.split(",")]
    args.out.mkdir(parents=True, exist_ok=True)
    results, pooled = [], {}
    for lever, settings in levers.items():
        done = [one(args, lever, settings, seed) for seed in seeds]
        results += done
        if len(seeds) > 1:
            pooled[lever] = pool(args, lever, done)
        with (args.out / "results.jsonl").open("a") as sink:
            for r in done:
                sink.write(json.dumps(r) + "\n")
        (args.out / "levers.md").write_text(render(results, pooled))
        print(render(results, pooled), flush=True)


if __name__ == "__main__":
    main()
