"""``darling world corpus | pretrain``: the world's corpus and a policy born in it; each command's flags are the fields
of its config (``darling.world.config``), built by ``cli/options.py``."""

from __future__ import annotations

import typer

from darling.cli.common import out
from darling.cli.help import HelpCommand
from darling.cli.options import config_command
from darling.world.config import PretrainConfig, WorldCorpusConfig

world_app = typer.Typer(
    help="A world where the truth is known: its corpus, and a tiny policy pretrained on it.",
    no_args_is_help=True,
    rich_markup_mode="markdown",
)

CORPUS_DOC = """Draw the world's pretraining corpus: answers to "name a fruit :" that name a
member of the category ("i pick vopi ."), drawn from a seed.

Examples:

    darling world corpus --output runs/world/corpus

    darling world corpus --wording long --answers 100000 \\
        --output runs/world-long/corpus

Then: `darling world pretrain --corpus runs/world/corpus --output runs/world/policy`.
OUTPUT/world.json holds the settings, the templates and the corpus's entropy per
answer. Every setting below is a field of `darling.world.config.WorldCorpusConfig`.
"""


def corpus(config: WorldCorpusConfig) -> None:
    from darling.world.corpus import write_corpus  # loads numpy, polars when run

    record = write_corpus(config)
    done = "written" if record["written"] else "found (made earlier with these settings)"
    identity = record["identity"]
    out.print(
        f"{config.output}: {identity['answers']:,} + {identity['validation_answers']:,} answers {done}; wording "
        f"{identity['wording']} ({record['templates_hiding_the_member']:.0%} of its templates hide the member "
        f"from a 4-gram rule); entropy {record['entropy_nats_per_answer']:.3f} nats per answer"
    )


PRETRAIN_DOC = """Pretrain a tiny Llama from scratch on a world corpus, over a word-level
tokenizer: an ordinary Hugging Face folder in OUTPUT/final that rl-train,
datagen rollouts and eval novelty take as they take SmolLM2.

Examples:

    darling world pretrain --corpus runs/world/corpus \\
        --output runs/world/policy

    darling world pretrain --corpus runs/world/corpus --max-steps 3000 \\
        --width 128 --heads 4 --threads 2 --output runs/world/wide

Rerun the same command to resume a killed run. OUTPUT/final/README.md gives
the held-out loss beside the corpus's entropy. Every setting below is a field
of `darling.world.config.PretrainConfig`.
"""


def pretrain(config: PretrainConfig) -> None:
    from darling.world.pretrain import pretrain as train  # loads torch, transformers when run

    figures = train(config)
    held_out, floor = figures["held_out"]["nats_per_answer"], figures["corpus_entropy_nats_per_answer"]
    done = "trained" if figures["trained_now"] else "found (trained earlier)"
    out.print(
        f"{config.output}/final: {figures['parameters']:,} parameters {done}; held-out loss {held_out:.3f} nats per "
        f"answer, the corpus's entropy {floor:.3f} ({held_out - floor:+.3f})"
    )


world_app.command("corpus", cls=HelpCommand)(config_command(WorldCorpusConfig, corpus, doc=CORPUS_DOC))
world_app.command("pretrain", cls=HelpCommand)(config_command(PretrainConfig, pretrain, doc=PRETRAIN_DOC))
