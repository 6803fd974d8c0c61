"""`darling pipeline --arms ...` (preset cpu-arms): every other arm of rl-train trained beside DARLING and GRPO from
the same start with the same settings and seeds, evaluated like them and compared with both. The dry run checks that
the runs differ in their method alone; the tiny chain (the item chain, cpu-items) trains four arms through their own
commands (passk trains through rl-train in tests/rl/test_arms.py; gpu-compare's dry run checks its study lines)."""

import json
import re

import pytest
from helpers import ARMS_CHAIN_TIMEOUT, TINY_CHAIN, assert_one_line_error, chain_stages, darling, darling_in_process

ARMS = ("darling-ngram", "darling-add", "entropy", "passk")


def rl_lines(script: str) -> dict[str, str]:
    """Each rl-train command after the warm-up, by its output folder, with that folder and its method left out (and
    the resume check and log redirection after it, which name the folder)."""
    lines = {}
    for line in script.splitlines():
        found = re.search(r'darling rl-train .*--output "\$RUN/(rl[a-z-]*)"', line)
        if found and found.group(1) != "rl-warmup":
            command = found.group(0) + line[found.end() : line.index(" $( ls -d")]
            command = command.replace(f'"$RUN/{found.group(1)}"', "OUT")
            lines[found.group(1)] = re.sub(r"--method [a-z-]+", "--method M", command)
    return lines


def test_cpu_arms_dry_run_trains_every_arm_with_darlings_settings_and_compares_each_with_both(tmp_path):
    result = darling("pipeline", "--preset", "cpu-arms", "--dry-run", "-o", tmp_path / "run")
    assert result.returncode == 0, result.stderr
    script = (tmp_path / "run" / "commands.sh").read_text()
    runs = rl_lines(script)
    assert set(runs) == {"rl", "rl-grpo", *(f"rl-{arm}" for arm in ARMS)}
    for arm in ARMS:  # the same line as DARLING's but for its method (and the entropy arm's coefficient)
        assert runs[f"rl-{arm}"].replace(" --entropy-coef 0.02", "") == runs["rl"], arm
        assert f'--output "$RUN/rl-{arm}"' in script and f"--method {arm} " in script
    assert "--entropy-coef" in runs["rl-entropy"] and "--entropy-coef" not in runs["rl-passk"]
    compare = next(line for line in script.splitlines() if '--output "$RUN/compare"' in line)
    for arm in ARMS:
        assert f"--pairs {arm}-rl:grpo-rl" in compare and f"--pairs darling-rl:{arm}-rl" in compare, arm
        assert f'--novelty "{arm}-rl=$RUN/eval-novelty/{arm}-rl"' in compare
        assert f'--training "{arm}-rl=$RUN/rl-{arm}"' in compare
        assert any(  # evaluated on the training prompts too, in one of eval novelty's commands
            f'--model "{arm}-rl=$RUN/rl-{arm}/final"' in line
            for line in script.splitlines()
            if 'eval novelty --output "$RUN/eval-novelty-train"' in line
        ), arm


@pytest.mark.parametrize(
    "preset, form",
    [
        ("cpu-items", "items"),
        ("gpu-items", "items"),
        ("cpu-items-phrase", "items-phrase"),
        ("gpu-items-phrase", "items-phrase"),
    ],
)
def test_the_items_presets_run_the_papers_chain_on_the_item_prompts(tmp_path, preset, form):
    """The item chain (issue 61): the warm-up first; its own answers to the RL prompts, paired and labelled by the item
    checker (and by the judge, scored against it), train the classifier; DARLING, GRPO, darling-ngram and the exact
    ceiling train from the warm-up, the method alone differing; every policy evaluated on both item prompt sets, its
    answers partitioned by the classifier and the n-gram rule; no arithmetic pass@k. (Without CUDA, gpu-items writes
    its commands and runs nothing, as gpu-compare. In process: cpu-arms's dry run above is the real process.) The
    classifier is the items recipe for its passes (issue 67); cpu-items-phrase is the same chain on the phrase form."""
    result = darling_in_process("pipeline", "--preset", preset, "--dry-run", "-o", tmp_path / "run")
    assert result.returncode == 0, result.stderr
    script = (tmp_path / "run" / "commands.sh").read_text()
    blocks = [block.split(" ", 2)[1] for block in script.split("# == ")[1:]]
    assert blocks == chain_stages(preset) and blocks[0] == "rl-warmup" and "eval-math" not in blocks  # no pass@k
    runs = rl_lines(script)
    assert set(runs) == {"rl", "rl-grpo", "rl-darling-ngram", "rl-checker-ceiling"}
    assert runs["rl-checker-ceiling"].replace(" --checker items", "") == runs["rl"]  # the method (and its checker)
    assert runs["rl-darling-ngram"] == runs["rl"] == runs["rl-grpo"]  # the method alone differs
    train = [line for line in script.splitlines() if "darling rl-train" in line]
    assert len(train) == 5 and all(f"--preset {form} " in line and " --strict-length" not in line for line in train)
    classifier = next(line for line in script.splitlines() if "darling train-classifier" in line)
    assert "--preset items " in classifier and "--max-steps -1 " in classifier  # its 10 passes, not 12 steps
    rollouts = next(line for line in script.splitlines() if "darling datagen rollouts" in line)
    assert f"--problems {form}-train" in rollouts and '--model "start=$RUN/rl-warmup/final"' in rollouts
    assert "--checker items" in next(line for line in script.splitlines() if "darling datagen pairs" in line)
    labels = [line for line in script.splitlines() if "darling datagen label" in line]
    assert len(labels) == 2 and '--output "$RUN/labels" --checker items --seed' in labels[0]
    assert "--judge-model smollm2 --checker items" in labels[1] and "answer-judge-prompt.txt" in labels[1]
    novelty = [line for line in script.splitlines() if "darling eval novelty" in line]
    assert {re.search(r"--prompts (\S+)", line).group(1) for line in novelty} == {f"{form}-train", f"{form}-heldout"}
    assert "darling eval math" not in script and script.count("darling eval partitions") == 1
    compare = [line for line in script.splitlines() if "darling eval compare" in line]
    quality = "item-phrase" if form == "items-phrase" else "item-sentence"
    assert len(compare) == 2 and all(f"--quality {quality}" in line for line in compare)
    assert all("--pairs darling-rl:darling-ngram-rl" in line for line in compare)
    assert all("--pairs checker-ceiling-rl:grpo-rl" in line for line in compare)


@pytest.mark.parametrize(
    "options, fragments",
    [
        (["--arms", "bogus"], ["arms:", "bogus", "darling-ngram"]),
        (["--arms", "passk", "--arms", "passk"], ["arms:", "at most once"]),
        (["--arms", "entropy"], ["--method entropy needs --entropy-coef > 0"]),  # rl-train's own check
        (["--set", "rl_arms.passk_k=2"], ["[rl_arms]", "--arms passk"]),
        (["--arms", "passk", "--no-grpo-baseline"], ["arms:", "grpo_baseline"]),
        (["--arms", "passk", "--set", "rl_arms.method=grpo"], ["[rl_arms] method", "set by the pipeline"]),
    ],
)
def test_arms_refused_in_one_line(tmp_path, options, fragments):
    result = darling("pipeline", "--preset", "cpu", "--dry-run", "-o", tmp_path / "run", *options)
    assert_one_line_error(result, *fragments)
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_the_item_chain_and_four_arms_train_evaluate_and_compare_at_tiny_size(tmp_path):
    """cpu-items' chain through its commands with a tiny random policy (wiring, folders, records, report: what each
    piece computes is tested where a test asserts it, tests/datagen/test_checker_labels.py, tests/rl/test_arms.py,
    tests/evals/test_eval_partitions.py): the warm-up's own answers, paired and labelled by the checker and the judge,
    the classifier, then DARLING, GRPO and four arms (the n-gram rule, the checker's ceiling, darling-add, entropy)."""
    run = tmp_path / "run"
    arms = ["--set=arms=darling-ngram,checker-ceiling,darling-add,entropy", "--set=rl_arms.entropy_coef=0.02"]
    item_chain = [
        "--set=rollouts_from=policy",  # TINY_CHAIN skips rollouts: this chain's are its own
        "--set=evaluate_training_prompts=false",
        "--set=datagen.limit=2",
        "--set=datagen.n=3",
        "--set=datagen.max_tokens=8",
        "--set=labels.judge_model=tiny:bytes-lm",
    ]
    command = ["pipeline", "--preset", "cpu-items", "-o", run, *TINY_CHAIN, *arms, *item_chain]
    result = darling(*command, timeout=ARMS_CHAIN_TIMEOUT)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    records = json.loads((run / "stages.json").read_text())["stages"]
    assert list(records) == chain_stages("cpu-items") and "eval-math" not in records
    assert all(r["status"] == "done" for r in records.values())
    rollouts = records["datagen"]["summary"]
    assert rollouts["rollouts"] == 6 and rollouts["models"] == ["start"] and "checker" in rollouts  # 2 prompts x 3
    assert records["labels"]["summary"]["judge"] == "checker:items"  # labels/, what the classifier trains on
    assert "agreement" in records["labels"]["summary"]["judge_scored"]  # labels-judge/, scored against it
    logs = {}
    own = ("darling-ngram", "checker-ceiling", "darling-add", "entropy")
    for arm in own:
        settings = json.loads((run / f"rl-{arm}" / "rl-settings.json").read_text())
        assert settings["method"] == arm and settings["policy"] == str(run / "rl-warmup" / "final"), arm
        assert (run / f"rl-{arm}" / "final" / "model.safetensors").exists(), arm
        logs[arm] = [h for h in json.loads((run / f"rl-{arm}" / "log_history.json").read_text()) if "reward" in h]
    assert json.loads((run / "rl-checker-ceiling" / "rl-settings.json").read_text())["checker"] == "items"
    # what acted: the partitioned arms log the share of groups their term changed, the entropy arm TRL's bonus
    assert all("darling/groups_changed" in h for arm in own[:3] for h in logs[arm])
    assert all(h["entropy_coef"] == pytest.approx(0.02) and h["entropy"] > 0 for h in logs["entropy"])
    compare = json.loads((run / "compare" / "compare.json").read_text())
    differences = compare["novelty"]["differences"]
    for arm in own:
        for pair in (f"{arm}-rl - grpo-rl", f"darling-rl - {arm}-rl"):
            assert differences[pair]["distinct_items"]["interval"], pair
    assert compare["term"]["entropy-rl"]["entropy_bonus"] > 0  # the report says what the entropy arm added
    partitions = json.loads((run / "eval-partitions" / "partitions.json").read_text())
    assert set(partitions["sets"]) == {"base", "darling-rl", "grpo-rl", *(f"{arm}-rl" for arm in own)}
    report = (run / "report.md").read_text()
    assert all(f"**`rl-{arm}/`**" in report for arm in own)
    assert "TRL's entropy bonus (coefficient x mean token entropy) took" in report
    assert "| entropy-rl - grpo-rl |" in report and "| darling-rl - darling-ngram-rl |" in report
    lead = report.split("## What this run shows", 1)[1].split("\n## ", 1)[0]  # the judge, the partition, the arms
    assert "**The judge against the checker**" in lead and "**What the reward's partition reads**" in lead
    assert "| checker-ceiling-rl - grpo-rl |" in lead


def test_arms_are_part_of_a_runs_identity_only_when_set(tmp_path):
    """A run made before ``arms`` existed has no such key in run.json and still resumes; adding an arm to a run
    made without it is refused (its compare/ would mix policies trained apart)."""
    run = tmp_path / "run"
    assert darling("pipeline", "--preset", "cpu", "--dry-run", "-o", run).returncode == 0
    assert "arms" not in json.loads((run / "run.json").read_text())
    assert darling("pipeline", "--preset", "cpu", "--dry-run", "-o", run).returncode == 0
    assert_one_line_error(darling("pipeline", "--preset", "cpu", "--dry-run", "-o", run, "--arms", "passk"), "arms=")
