"""The run folder's layout: each stage's folder under ``RUN/``, each RL run's folder, and the name each trained policy
has in the evaluations. A room reads another stage's output by these names, never through that stage's module, so the
rooms stand alone (``tests/core/test_architecture.py`` holds them independent)."""

from __future__ import annotations

WORLD_FOLDER = "world"  # the world's corpus and the policy born in it
WORLD_POLICY = "world/policy"  # world pretrain's run: the policy in world/policy/final
WARMUP_FOLDER = "rl-warmup"  # the GRPO warm-up every RL run starts from
ROLLOUTS_FOLDER = "datagen"  # the rollouts the pairs are drawn from
PAIRS_FOLDER = "pairs"
LABELS_FOLDER = "labels"  # the labels the classifier trains on (a judge's, or a checker's)
CLASSIFIER_FOLDER = "classifier"  # the export every later stage scores with
RL_FOLDER = "rl"  # DARLING's run, where the RL stage's servers write their ready files
GRPO_RUN = "rl-grpo"  # the GRPO baseline
EVAL_MATH_FOLDER = "eval-math"
EVAL_NOVELTY_FOLDER = "eval-novelty"  # the held-out prompts
NOVELTY_TRAIN = "eval-novelty-train"  # the same evaluation on the RL prompts
EVAL_CREATIVE_FOLDER = "eval-creative"
COMPARE_FOLDER = "compare"

# The policies the evaluations compare, each in eval-math/<name>/ and eval-novelty/<name>/.
BASE_POLICY, DARLING_POLICY, GRPO_POLICY = "base", "darling-rl", "grpo-rl"


def arm_folder(method: str) -> str:
    """RUN/rl-<method>/: another arm's run (``arms``)."""
    return f"rl-{method}"


def arm_policy(method: str) -> str:
    """Another arm's policy name in the evaluations (``<method>-rl``, as DARLING's is ``darling-rl``)."""
    return f"{method}-rl"
