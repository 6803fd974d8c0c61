"""The world (``world/``), first in the chain when ``[world]`` is set: its corpus (``world/corpus/``, `darling world
corpus`) and the policy born in it (``world/policy/``, `darling world pretrain`), which every RL run then starts from
and whose own answers train the classifier (``rollouts_from = policy``). The world and its policy have seeds of their
own (``[world] seed``, ``[pretrain] seed``): the same world whatever the chain's seed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from darling.pipeline.folders import WORLD_FOLDER, WORLD_POLICY
from darling.pipeline.script import Block
from darling.pipeline.stage import Plan, Stage, memoised, read_json
from darling.pipeline.steps import Step, block_threads, shown, stage_config
from darling.world.config import CORPUS_FILE, PretrainConfig, WorldCorpusConfig

CORPUS = "corpus"  # world/corpus/: the corpus the policy is pretrained on


def _with_world(plan: Plan) -> bool:
    return bool(plan.config.world)


@memoised
def corpus_step(plan: Plan) -> Step:
    c = plan.config
    wired = {"output": c.run / WORLD_FOLDER / CORPUS}
    config = stage_config(c, "world", WorldCorpusConfig, wired)
    return Step("world-corpus", ("world", "corpus"), config, explicit=shown(c, wired, "world"))


@memoised
def pretrain_step(plan: Plan) -> Step:
    """The pretraining, alone on the stage's cores."""
    c = plan.config
    wired = {"corpus": corpus_step(plan).config.output, "output": c.run / WORLD_POLICY, "threads": block_threads(c)}
    config = stage_config(c, "pretrain", PretrainConfig, wired)
    return Step("world-pretrain", ("world", "pretrain"), config, explicit=shown(c, wired, "pretrain"))


def world_block(plan: Plan) -> Block:
    corpus, pretrain = corpus_step(plan), pretrain_step(plan)
    settings = pretrain.config
    where = (
        f"CPU, minutes: the corpus ({corpus.config.answers:,} answers, wording {corpus.config.wording}), then a "
        f"{settings.layers}-layer Llama of width {settings.width} pretrained on it for {settings.max_steps} steps"
    )
    return Block(WORLD.name, where, [step.line(plan.run) for step in (corpus, pretrain)], [corpus, pretrain])


def world_summary(plan: Plan) -> dict[str, Any]:
    corpus = read_json(Path(corpus_step(plan).config.output) / CORPUS_FILE)
    card = read_json(Path(pretrain_step(plan).config.output) / "final" / "card.json")
    return {
        "wording": corpus["identity"]["wording"],
        "templates": corpus["templates"],
        "templates_hiding_the_member": corpus["templates_hiding_the_member"],
        "answers": corpus["identity"]["answers"],
        "corpus_entropy": corpus["entropy_nats_per_answer"],
        "held_out_loss": card["held_out"]["nats_per_answer"],
        "parameters": card["parameters"],
        "vocabulary": card["vocabulary"],
        "steps": card["settings"]["max_steps"],
        "train_seconds": card["train_seconds"],
    }


def world_section(s: dict[str, Any]) -> list[str]:
    return [
        "A synthetic world where the truth is known (`darling.core.world`): a prompt names a category (`name a fruit "
        ":`), an answer names one of its 12 invented members in one of the wording's templates, the member read off "
        "by rule (the `world` checker). What it shows is the reward's mechanism and the partition's part in it; it "
        "says nothing of gains on real tasks.",
        "",
        f"- corpus: {s['answers']:,} answers, wording `{s['wording']}` ({len(s['templates'])} templates, "
        f"{s['templates_hiding_the_member']:.0%} of them hiding the member from a 4-gram rule); entropy "
        f"{s['corpus_entropy']:.3f} nats per answer",
        f"- policy: {s['parameters']:,} parameters, a word-level vocabulary of {s['vocabulary']}, {s['steps']} steps "
        f"({s['train_seconds']:.0f} s); held-out loss {s['held_out_loss']:.3f} nats per answer, "
        f"{s['held_out_loss'] - s['corpus_entropy']:+.3f} from the corpus's entropy (the floor); its card: "
        f"[`{WORLD_POLICY}/final/README.md`]({WORLD_POLICY}/final/README.md)",
        "",
    ]


WORLD = Stage(
    WORLD_FOLDER,
    "The world: its corpus and the policy born in it",
    world_block,
    world_summary,
    world_section,
    placement="node",
    runs=_with_world,
    tables=("world", "pretrain"),
)
