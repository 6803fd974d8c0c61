"""`darling pipeline` without running a model: its settings (chain-level fields and one table per stage), commands.sh
for every preset (each `darling` line parsed by the real command line; paper-tiny's the same commands, launchers and
option names as paper's), the paper preset without GPUs, and the runner's stage records and resumption."""

import json
import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
from helpers import assert_one_line_error, darling

from darling.core.errors import UserInputError
from darling.pipeline import build_config
from darling.pipeline.script import render_script
from darling.pipeline.stage import Plan
from darling.pipeline.stages import STAGE_NAMES, active_stages, blocks


# -- fast: settings, commands.sh, the runner -----------------------------------------------------------------------
def test_stage_tables_presets_and_identity(tmp_path):
    cpu = build_config("cpu", tmp_path, **{"rl.max_steps": 2, "rl.floor": "0.1", "eval_math.problems": "arithmetic,x"})
    assert (cpu.rl["max_steps"], cpu.rl["floor"], cpu.eval_math["problems"]) == (2, 0.1, ["arithmetic", "x"])
    assert cpu.rl["preset"] == "naming" and cpu.classifier["preset"] == "cpu"  # the preset's table, refined
    identity = cpu.identity()
    assert next(iter(identity)) == "preset" and identity["rl.floor"] == 0.1 and identity["rl.max_steps"] == 2
    assert "output" not in identity and "threads" not in identity and "jobs" not in identity
    import copy

    ray = build_config("paper", tmp_path, launcher="ray")
    before = copy.deepcopy(vars(ray))
    ray.validate()  # the checks change nothing: tables are resolved when the config is made
    assert vars(ray) == before and ray.datagen.get("engine") != "ray"  # where a step runs: the step, not the table
    rollouts = next(s for b in blocks(Plan(ray)) for s in b.steps if s.words == ("datagen", "rollouts"))
    assert (rollouts.config.engine, rollouts.config.ray_address) == ("ray", "auto")
    compare = build_config("cpu-compare", tmp_path)  # base = "cpu", every layer trained
    cpu_again = build_config("cpu", tmp_path)
    assert compare.rl == {**cpu_again.rl, "trainable_layers": None} and compare.preset == "cpu-compare"
    assert cpu_again.rl["per_device_train_batch_size"] == 32 and cpu_again.rl["trainable_layers"] == 10
    assert compare.rl_warmup == cpu_again.rl_warmup
    for bad, message in [
        ({"nope": 1}, "unknown option 'nope'"),
        ({"rl.max_steps": "x"}, "[rl]: option 'max_steps': cannot read 'x'"),
        ({"rl.nope": 1}, "[rl] nope: unknown option (not a field of RLTrainConfig)"),
        ({"rl.output": "elsewhere"}, "[rl] output: set by the pipeline"),
        ({"classifier.preset": "gpu"}, "[classifier] preset: unknown preset 'gpu'"),
        ({"labels.prompt_file": "inputs:nope.txt"}, "unknown pipeline input 'inputs:nope.txt'"),
        ({"labels.structured": "regex"}, "the hf engine cannot follow a regex"),
        ({"rl.correct_only": "true"}, "correct_only with floor 0"),
    ]:
        with pytest.raises(UserInputError, match=re.escape(message)):
            config = build_config("cpu", tmp_path, **bad)
            blocks(Plan(config))  # a command's own rules are checked when its line is built
    with pytest.raises(UserInputError, match="unknown preset"):
        build_config("gpu", tmp_path)
    with pytest.raises(UserInputError, match=re.escape("multi-cpu launches CPU processes: set [rl] use_cpu = true")):
        blocks(Plan(build_config("paper-tiny", tmp_path, **{"rl.use_cpu": "false"})))
    # TRL's own vLLM server (vllm_mode = server) never gets a classifier replica's port, and runs on its own GPUs.
    server = {"rl.vllm_mode": "server", "rl.vllm_server_port": 8101, "rl_gpus": "0,1,2,3", "trl_vllm_gpus": "4,5"}
    with pytest.raises(UserInputError, match=re.escape("vllm_server_port 8101 is a classifier replica's port")):
        blocks(Plan(build_config("paper", tmp_path, **server)))  # the rl room's check
    script = "\n".join(
        line
        for s in blocks(Plan(build_config("paper", tmp_path, **{**server, "rl.vllm_server_port": 8000})))
        for line in s.lines
    )
    assert "CUDA_VISIBLE_DEVICES=4,5 trl vllm-serve --model Qwen/Qwen3-4B-Base --host 127.0.0.1 --port 8000" in script


def test_the_chain_checks_a_setting_as_its_command_will_have_it():
    """The pipeline's own checks read a table's value, else its preset's, else the command's default: reading the
    table alone (with a hard-coded default) missed a value set by the stage's preset."""
    from darling.pipeline.config import resolved
    from darling.rl.config import RLTrainConfig

    assert resolved({"preset": "cpu"}, RLTrainConfig, "gradient_checkpointing") is False  # the preset's
    assert resolved({"preset": "cpu", "gradient_checkpointing": True}, RLTrainConfig, "gradient_checkpointing")
    assert resolved({}, RLTrainConfig, "vllm_server_port") == 8000  # the command's default
    assert resolved({"preset": "paper-chat"}, RLTrainConfig, "reward_model") == RLTrainConfig.preset_values(
        "paper-chat"
    ).get("reward_model")


def darling_commands(script: str, run: Path) -> list[tuple[list[str], list[str]]]:
    """(launcher words, darling arguments) of every `darling` command in a commands.sh block."""
    commands = []
    for line in script.replace("$RUN", str(run)).splitlines():
        line = re.sub(r"\$\( .* \)", "", line)  # the --resume test
        line = re.sub(r' > "?[^ ]+"? 2>&1( \|\| fail .*)? &( PIDS\+=\(\$!\))?$', "", line).rstrip(" &")  # its log
        line = re.sub(r'^\[ -f "[^"]+" \] \|\| ', "", line)  # skipped once done
        if line.startswith("#") or "darling" not in line or line.startswith(("fail", "wait", "kill")):
            continue
        words = shlex.split(line, comments=True)
        if "-m" in words and words[words.index("-m") + 1] == "darling":
            at = words.index("-m")
            commands.append((words[:at], words[at + 2 :]))
        elif words[0] == "darling":
            commands.append(([], words[1:]))
    return commands


@pytest.mark.parametrize("preset", ["cpu", "paper", "paper-tiny", "paper-chat", "chat-tiny"])
def test_every_command_in_commands_sh_parses_to_its_steps_config(tmp_path, preset):
    """Each `darling` line of commands.sh, parsed by the real command line, builds exactly the config (and the
    parameters) of its step; its launcher is the step's. The runner runs these very lines."""
    from darling.cli.main import app
    from darling.cli.options import parse_argv
    from darling.pipeline.steps import run_relative

    bench = {"eval_creative.bench_dir": str(tmp_path / "bench")} if preset == "chat-tiny" else {}
    config = build_config(preset, tmp_path / "run", **bench)
    stages = blocks(Plan(config))
    for stage in stages:
        lines = darling_commands("\n".join(stage.lines), config.run)
        assert len(lines) == len(stage.steps), stage.name
        for (launcher, words), step in zip(lines, stage.steps, strict=True):
            parsed, params = parse_argv(app, words)  # raises on an unknown option or a bad value
            assert parsed == step.config, (stage.name, words)
            assert {k: params[k] for k in step.params} == step.params, words
            assert launcher == [run_relative(w, config.run).replace("$RUN", str(config.run)) for w in step.launcher]
    script = render_script(config, stages)
    assert subprocess.run(["bash", "-n"], input=script, text=True).returncode == 0  # valid shell


def structure(preset: str, run: Path) -> list[tuple[str, list[tuple[str, ...]]]]:
    """Per stage, per command: the launcher's program and flags, the command's words and the option names it sets
    (values dropped): what paper-tiny must share with paper."""
    from darling.pipeline.steps import run_relative

    config = build_config(preset, run)
    out = []
    for stage in blocks(Plan(config)):
        shape = []
        for step in stage.steps:
            words = [run_relative(w, config.run) for w in step.launcher]
            launcher = tuple(w for w in words if not re.match(r"^[A-Z_]+=", w) and not w[0].isdigit())
            argv = step.argv(config.run)
            options = set()  # --x, --no-x and --set x=... all set the one option x
            for i, word in enumerate(argv):
                if word == "--set":
                    options.add("--" + argv[i + 1].split("=")[0].replace("_", "-"))
                elif word.startswith("--"):
                    options.add(re.sub(r"^--no-", "--", word))
            env = tuple(w.split("=")[0] for w in step.launcher if re.match(r"^[A-Z_]+=", w))
            shape.append((*env, *launcher, *step.words, *sorted(options)))
        out.append((stage.name, shape))
    return out


def test_paper_tiny_runs_papers_commands_with_only_values_changed(tmp_path):
    """The same stages, the same commands with the same launchers (torchrun, accelerate launch, CUDA_VISIBLE_DEVICES)
    and the same option names: only values differ (sizes, model names, device counts, the accelerate config). Its
    stage presets differ from paper's only in sizes, models and devices."""
    from darling.classifier.config import ClassifierTrainConfig
    from darling.rl.config import RLTrainConfig

    paper, tiny = structure("paper", tmp_path / "p"), structure("paper-tiny", tmp_path / "t")
    without = ("world", "rl-warmup", "eval-creative")  # the paper's chain starts RL from its policy, without a warm-up
    assert [name for name, _ in paper] == [name for name, _ in tiny] == [s for s in STAGE_NAMES if s not in without]
    for (name, a), (_, b) in zip(paper, tiny, strict=True):  # how many side by side follows `jobs`: the kinds match
        assert sorted(set(a)) == sorted(set(b)), name
    assert any("torchrun" in cmd for _, shape in paper for cmd in shape)
    assert any("accelerate" in cmd and "CUDA_VISIBLE_DEVICES" in cmd for _, shape in paper for cmd in shape)
    sizes = {"max_tokens_per_response", "max_steps", "warmup_steps", "global_batch_size", "checkpoint_every_n_steps"}
    changed = set(ClassifierTrainConfig.preset_values("paper-tiny").items()) - set(
        ClassifierTrainConfig.preset_values("paper").items()
    )
    # strategy: Lightning's FSDP runs on CUDA only, so the CPU's 2 processes use DDP; auc_floor: a random tiny
    # backbone is held to no validation floor
    assert {k for k, _ in changed} <= {"backbone", "log_every_n_steps", "strategy", "auc_floor", *sizes}
    rl_paper, rl_tiny = RLTrainConfig.preset_values("paper-math"), RLTrainConfig.preset_values("paper-tiny")
    rl_changed = {k for k in rl_tiny if rl_tiny[k] != rl_paper.get(k)}
    rl_sizes = {"limit", "max_completion_length", "per_device_train_batch_size", "gradient_accumulation_steps"}
    hardware = {"use_vllm", "use_cpu", "bf16", "threads"}  # TRL's vLLM moves weights over NCCL: GPUs only
    assert rl_changed <= {"policy", "problems", "steps_per_generation", "max_steps", "save_steps", *rl_sizes, *hardware}
    for key in ("floor", "correct_only", "method", "scale_rewards", "loss_type", "user_template", "num_generations"):
        assert rl_tiny.get(key) == rl_paper.get(key), key  # the reward and the loss are paper-math's


def test_paper_preset_without_gpus_writes_commands_and_runs_nothing(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA GPUs: the paper preset would really run")
    run = tmp_path / "paper"
    result = darling("pipeline", "--preset", "paper", "--output", run, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "needs CUDA GPUs" in result.stdout and "ran nothing" in result.stdout
    script = (run / "commands.sh").read_text()
    for needle in [
        "darling datagen rollouts --problems agentica-org/DeepScaleR-Preview-Dataset",
        "--engine vllm --tensor-parallel-size 1 --data-parallel-size 8",
        "--judge-model meta-llama/Llama-3.3-70B-Instruct",
        "--structured regex",
        "torchrun --standalone --nproc-per-node 8 -m darling train-classifier --preset paper",
        "darling serve-classifier --model",
        "--devices 6,7",
        "CUDA_VISIBLE_DEVICES=0,1,2,3,4,5 accelerate launch",
        "rl-train --preset paper-math",
        "--classifier-urls http://127.0.0.1:8100 --classifier-urls http://127.0.0.1:8101",
        "--scale-rewards group",  # the official GRPO baseline's std-normalised advantages
        "--n 256",
        "--prompts noveltybench-curated",  # NoveltyBench's 100 curated prompts, not toy ones
        "darling eval compare",
    ]:
        assert needle in script, needle
    generators = json.loads((run / "inputs" / "generators.json").read_text())["generators"]
    assert len(generators) == 8 and {"name", "model"} <= set(generators[0])
    math7b = next(g for g in generators if g["name"] == "qwen2.5-math-7b-instruct")
    assert 28 % math7b["tensor_parallel_size"] == 0  # its 28 attention heads split evenly
    assert "deepspeed_config" in (run / "inputs" / "accelerate.yaml").read_text()
    assert not any((run / stage).exists() for stage in STAGE_NAMES) and not (run / "stages.json").exists()
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["status"] == "needs-gpu" and manifest["cuda_available"] is False
    assert manifest["config"]["preset"] == "paper" and manifest["command_line"].startswith("darling pipeline")


def test_without_a_gpu_driver_the_pipelines_process_does_not_import_torch(tmp_path):
    """Every `darling pipeline` process writes a manifest that says whether CUDA is here; without a GPU driver it
    says no without importing torch (1.2 of a finished run's 2.5 CPU-s: docs/measurements.md). Python's own import
    log (PYTHONPROFILEIMPORTTIME) of a dry run lists the runner and no torch; the manifest still says no CUDA."""
    from darling.core.devices import no_gpu_driver

    if not no_gpu_driver():
        pytest.skip("a GPU driver is on this machine: the manifest asks torch")
    command = [sys.executable, "-m", "darling", "pipeline", "--preset", "cpu", "--dry-run", "-o", str(tmp_path)]
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    log = [line for line in result.stderr.splitlines() if line.startswith("import time:")]
    imported = {line.rpartition("|")[2].strip() for line in log}
    assert "darling.pipeline.runner" in imported and "torch" not in imported
    assert json.loads((tmp_path / "manifest.json").read_text())["cuda_available"] is False


def test_paper_preset_with_verl_writes_rl_train_engine_verl_and_its_command_writes_main_ppo(tmp_path):
    """`--rl-engine verl`: each RL run is `rl-train --engine verl` on the RL GPUs (no accelerate), beside the served
    classifier; the DARLING line of commands.sh, run as written with --dry-run (and packaged problems for the hub
    dataset), writes main_ppo.sh with darling's agent-loop manager and the served replicas."""
    run = tmp_path / "paper"
    result = darling("pipeline", "--preset", "paper", "--rl-engine", "verl", "--output", run, "--dry-run", timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    script = (run / "commands.sh").read_text()
    lines = [line for line in script.splitlines() if "darling rl-train" in line]
    assert len(lines) == 2 and all("CUDA_VISIBLE_DEVICES=0,1,2,3,4,5 darling rl-train" in line for line in lines)
    assert all("--engine verl --verl-gpus 6" in line for line in lines) and "accelerate launch" not in script
    assert not (run / "inputs" / "accelerate.yaml").exists()
    darling_line = next(line for line in lines if '--output "$RUN/rl"' in line)
    assert "--method grpo" in next(line for line in lines if line is not darling_line)
    words = shlex.split(darling_line.replace("$RUN", str(run)).split("|| ", 1)[1].split(" $(", 1)[0])
    words = words[words.index("darling") + 1 :]
    (run / "classifier").mkdir()  # written by the classifier stage before RL; the dry run only names it
    done = darling(*words, "--dry-run", "--problems", "gsm8k", "--limit", "8", timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    main_ppo = (run / "rl" / "verl" / "main_ppo.sh").read_text()
    assert "agent_loop_manager_class=darling.rl.verl_agent_loop.DarlingAgentLoopManager" in main_ppo
    assert "+darling.classifier_urls=[http://127.0.0.1:8100,http://127.0.0.1:8101]" in main_ppo
    assert "trainer.n_gpus_per_node=6" in main_ppo and "actor_rollout_ref.rollout.n=8" in main_ppo
    several = darling(
        "pipeline",
        "--preset",
        "paper",
        "--rl-engine",
        "verl",
        "--launcher",
        "slurm",
        "--nodes",
        "2",
        "--output",
        tmp_path / "slurm",
        "--dry-run",
        timeout=300,
    )
    assert_one_line_error(several, "rl_engine verl on several nodes needs one Ray cluster across them")


def test_dry_run_then_a_changed_setting_or_preset_is_refused(tmp_path):
    run = tmp_path / "dry"
    result = darling("pipeline", "--output", run, "--dry-run", "--set", "rl.max_steps=2", timeout=300)
    assert result.returncode == 0, result.stderr
    assert "dry run" in result.stdout and "darling rl-train --preset naming" in result.stdout
    script = (run / "commands.sh").read_text()
    assert "--max-steps 2" in script and "--import champ" in script and "--structured choice" in script
    assert not any((run / stage).exists() for stage in STAGE_NAMES)
    refused = darling("pipeline", "--output", run, "--set", "rl.max_steps=3", timeout=120)
    assert_one_line_error(refused, "rl.max_steps=2", "rl.max_steps=3", "new --output")
    assert_one_line_error(
        darling("pipeline", "--preset", "paper", "--output", run, timeout=120), "preset='cpu'", "preset='paper'"
    )
    other = tmp_path / "not-a-run"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    assert_one_line_error(darling("pipeline", "--output", other, "--dry-run", timeout=120), "not a pipeline run")


def test_runner_records_each_block_and_resumes_at_the_stage_that_failed(tmp_path, monkeypatch):
    """Each stage's block runs in RUN with $RUN set, its output in logs/<stage>.log; a failing block stops the run
    (the later stages untouched) and the rerun resumes at that stage. Blocks stand in for the real commands here
    (shell lines), the runner around them is the real one."""
    from darling.pipeline import runner, stages
    from darling.pipeline.script import Block

    failing = {"rl"}

    def block(name):
        def stand_in(config):
            line = "echo boom; exit 3" if name in failing else f'mkdir -p "$RUN/{name}" && pwd > "$RUN/{name}/cwd.txt"'
            return Block(name, "stand-in", [f"# {name}", line])

        return stand_in

    stand_ins = tuple(
        replace(s, block=block(s.name), summary=lambda c, n=s.name: {"n": n}, report=lambda x: [f"stand-in {x}"])
        for s in stages.STAGES
    )
    monkeypatch.setattr(stages, "STAGES", stand_ins)
    for stage in stand_ins:
        monkeypatch.setitem(stages.STAGE, stage.name, stage)
    config = build_config("cpu", tmp_path / "run")
    lines: list[str] = []
    with pytest.raises(runner.StageFailed, match="rl: a command exited with 3"):
        runner.run_pipeline(config, log=lines.append)
    records = json.loads((config.run / "stages.json").read_text())["stages"]
    names = [n for n in STAGE_NAMES if n != "world"]  # the cpu chain's policy is downloaded, not born in the world
    rl = names.index("rl")  # every stage before it done, rl failed, none after it run
    assert [records[n]["status"] for n in names[: rl + 1]] == ["done"] * rl + ["failed"]
    assert not set(records) & set(names[rl + 1 :])
    assert (config.run / "datagen" / "cwd.txt").read_text().strip() == str(config.run)
    assert "boom" in (config.run / "logs" / "rl.log").read_text() and "  boom" in lines
    assert "**failed**" in (config.run / "report.md").read_text()

    failing.clear()
    result = runner.run_pipeline(config, log=lines.append)
    assert result["status"] == "done" and sum("skipped" in line for line in lines) == 5
    records = json.loads((config.run / "stages.json").read_text())["stages"]
    assert all(r["status"] == "done" for r in records.values()) and records["rl"]["attempts"] == 2
    assert records["rl"]["commands"] == ['mkdir -p "$RUN/rl" && pwd > "$RUN/rl/cwd.txt"']
    assert json.loads((config.run / "manifest.json").read_text())["status"] == "done"


class StandIn:
    """A step whose command is shell text: the block's real scheduling lines around a stand-in command."""

    def __init__(self, name: str, shell: str):
        self.name, self.shell = name, shell

    def line(self, run: Path) -> str:
        return f"( {self.shell} )"

    guarded = line  # a stand-in has no finished marker to skip on


def ends_soon(pid_file: Path, timeout: float = 10) -> bool:
    """The process whose pid ``pid_file`` holds is gone (or a zombie) within ``timeout`` s: a stopped process takes a
    moment to go, and waiting for that proves it went (a fixed sleep would only hope so)."""
    stat = Path(f"/proc/{pid_file.read_text().strip()}/stat")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if stat.read_text().rsplit(")", 1)[1].split()[0] == "Z":
                return True
        except (FileNotFoundError, ProcessLookupError):
            return True
        time.sleep(0.05)
    return False


def run_side_by_side(tmp_path: Path, *steps: StandIn, **popen) -> subprocess.Popen:
    from darling.pipeline.script import PRELUDE, side_by_side

    script = "\n".join([*PRELUDE, *side_by_side(list(steps), tmp_path, jobs=2)])
    env = {"RUN": str(tmp_path), "PATH": "/usr/bin:/bin"}
    return subprocess.Popen(["bash", "-c", script], env=env, text=True, **popen)


def test_side_by_side_starts_the_next_command_when_any_ends_and_a_failure_ends_the_block(tmp_path):
    """jobs = 2 over three commands: the third starts when the quicker of the first two ends, not when both have
    (a slow base model's eval no longer holds a free core); a failing command ends the block with its log's end
    and stops the others, at once. Shell stand-ins for the commands, the real prelude and scheduling lines."""
    order = tmp_path / "order"
    # "a" ends only after "c" has run: if the third command waited for both first ones, the block would never end
    slow = StandIn("a", f"until grep -qx c {order} 2>/dev/null; do sleep 0.05; done; echo a >> {order}")
    quick, third = (StandIn(n, f"sleep {t}; echo {n} >> {order}") for n, t in [("b", 0.3), ("c", 0)])
    block = run_side_by_side(tmp_path, slow, quick, third)
    assert block.wait(timeout=60) == 0
    assert order.read_text().split() == ["b", "c", "a"]

    order.unlink()
    pid_file = tmp_path / "slow.pid"
    slow = StandIn("a", f"sh -c 'echo $$ > {pid_file}; exec sleep 30'")
    broken = StandIn("b", f"until [ -s {pid_file} ]; do sleep 0.05; done; echo the-reason; exit 7")
    start = time.monotonic()
    block = run_side_by_side(tmp_path, slow, broken, third, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, stderr = block.communicate(timeout=60)
    assert block.returncode == 1 and "b failed; the end of" in stderr and "the-reason" in stderr
    assert time.monotonic() - start < 10  # not after the slow one's 30 s
    assert ends_soon(pid_file)  # the slow one was stopped with the block (else it would sleep for 30 s)
    assert not order.exists()  # the third never started


def parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


CTRL_C_CHILD = """
import signal, sys
from pathlib import Path
# as under a terminal (whatever the test worker ignores), or ignored and blocked as a library left it in a suite
signal.signal(signal.SIGINT, signal.default_int_handler if sys.argv[3] == "terminal" else signal.SIG_IGN)
if sys.argv[3] != "terminal":
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
sys.path[:0] = [sys.argv[1], sys.argv[1] + "/../support"]
from test_pipeline_commands import StandIn
from darling.pipeline import build_config
from darling.pipeline.script import Block, side_by_side
from darling.pipeline.runner import run_block
config = build_config("cpu", Path(sys.argv[2]) / "run")
steps = [StandIn(n, f"sh -c 'echo $$ > {sys.argv[2]}/{n}.pid; exec sleep 30'") for n in "ab"]
try:
    run_block(config, Block("rl", "stand-in", side_by_side(steps, config.run, jobs=2)), 1, lambda line: None)
except BaseException as exc:
    print(type(exc).__name__, exc, flush=True)
"""


@pytest.mark.parametrize("runner_sigint", ["terminal", "ignored-and-blocked"])
def test_ctrl_c_stops_a_block_and_every_command_it_started(tmp_path, runner_sigint):
    """Ctrl-C as a terminal sends it: SIGINT once to the foreground process group (the runner and the block's bash;
    `set -m` gives each side-by-side command a group of its own, so only the block's trap can stop them), the runner
    in a session of its own so the group is its alone. The runner stops and no command outlives it (they would sleep
    on for 30 s). Also when the runner ignores SIGINT and its thread blocks it (as a library left it in a full suite):
    a child inherits the mask, so the runner restores both for the block (``restore_stop_signals``), which exits 130
    (without that the block ran its 30 s and exited 0)."""
    import signal

    runner = subprocess.Popen(
        [sys.executable, "-c", CTRL_C_CHILD, str(Path(__file__).parent), str(tmp_path), runner_sigint],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    pids = [tmp_path / f"{n}.pid" for n in "ab"]
    deadline = time.monotonic() + 60
    while not all(p.exists() and p.read_text().strip() for p in pids):
        assert time.monotonic() < deadline and runner.poll() is None, runner.communicate()[0]
        time.sleep(0.05)
    os.killpg(runner.pid, signal.SIGINT)
    output = runner.communicate(timeout=30)[0]
    expected = "KeyboardInterrupt" if runner_sigint == "terminal" else "StageFailed rl: a command exited with 130"
    assert output.startswith(expected), output
    assert all(ends_soon(p) for p in pids)


def test_side_by_side_commands_that_end_together_never_fail_their_block(tmp_path):
    """The cpu chain's own rl and eval-novelty blocks, as the runner runs them (``run_block``: bash -c, output to a
    pipe), each darling command swapped for a `sleep` that ends within a millisecond of its siblings'. Every run must
    succeed: with `wait -n` a quarter of them failed (exit 127 -> 1) though every command had ended well."""
    from darling.pipeline.runner import StageFailed, run_block

    config = build_config("cpu", tmp_path / "run")
    stages = {s.name: s for s in blocks(Plan(config))}
    failures = []
    for name, runs in [("rl", 30), ("eval-novelty", 10)]:
        stage = stages[name]
        lines = list(stage.lines)
        for k, step in enumerate(stage.steps):
            lines = [line.replace(step.line(config.run), f"sleep 0.{100 + k % 2}") for line in lines]
        assert sum("sleep 0.1" in line for line in lines) == len(stage.steps), lines
        stand_in = replace(stage, lines=lines)
        for attempt in range(runs):
            try:
                run_block(config, stand_in, attempt, lambda line: None)
            except StageFailed as exc:
                failures.append(f"{name}: {exc}")
    assert not failures, f"{len(failures)} false failures: {failures[0]}"


# -- slow: the whole cpu chain, every stage through its commands ----------------------------------------------------


def test_slurm_jobs_for_two_nodes_parse_to_the_steps_configs(tmp_path):
    """`--launcher slurm --nodes 2`: an sbatch script per stage with its node and GPU counts, submit.sh chaining them
    (afterok), the training stages started once per node by srun at a c10d rendezvous on the first node, the
    classifier replicas bound to that node's name and called by it; every `darling` line parsed by the real command
    line builds its step's config. Nothing runs, and `local` writes no slurm folder."""
    from darling.cli.main import app
    from darling.cli.options import parse_argv
    from darling.pipeline.launch_slurm import SLURM_DIR, SUBMIT

    run = tmp_path / "run"
    result = darling(
        "pipeline",
        "--preset",
        "paper",
        "--launcher",
        "slurm",
        "--nodes",
        2,
        "--gpus-per-node",
        8,
        "--set",
        "slurm.partition=gpu",
        "--set",
        "slurm.time=48:00:00",
        "-o",
        run,
    )
    assert result.returncode == 0 and f"bash {run / SLURM_DIR / SUBMIT}" in result.stdout, result.stderr
    config = build_config("paper", run, launcher="slurm", nodes=2, gpus_per_node=8)
    stages = blocks(Plan(config))
    submit = (run / SLURM_DIR / SUBMIT).read_text()
    jobs = re.findall(r"sbatch --parsable(?: --dependency=\"afterok:\$prev\")? (\S+)\)", submit)
    assert jobs == [f"{i:02d}-{s.name}.sbatch" for i, s in enumerate(stages, 1)]
    assert submit.count('--dependency="afterok:$prev"') == len(stages) - 1
    placed = {stage.name: stage.placement for stage in active_stages(Plan(config))}  # the registry's placements
    for name, stage in zip(jobs, stages, strict=True):
        text = (run / SLURM_DIR / name).read_text()
        assert subprocess.run(["bash", "-n"], input=text, text=True).returncode == 0, name
        nodes = 2 if placed[stage.name] == "nodes" else 1
        assert f"#SBATCH --nodes={nodes}\n" in text and "#SBATCH --partition=gpu\n" in text, name
        assert ("#SBATCH --gpus-per-node=8\n" in text) == (placed[stage.name] != "cpu"), name
        lines = darling_commands(text.replace('"$HEAD_NODE"', "node-0").replace("$HEAD_NODE", "node-0"), run)
        assert len(lines) == len(stage.steps), name
        for (launcher, words), step in zip(lines, stage.steps, strict=True):
            parsed, _ = parse_argv(app, words)
            if step.words[0] == "serve-classifier":  # bound to the first node's name on two nodes
                assert parsed.host == "node-0"
                parsed = replace(parsed, host=step.config.host)
            if step.words[0] == "rl-train":  # the replicas' URLs name the first node
                assert parsed.classifier_urls == [u.replace("127.0.0.1", "node-0") for u in step.config.classifier_urls]
                parsed = replace(parsed, classifier_urls=step.config.classifier_urls)
                assert launcher[:4] == ["srun", "--nodes=2", "--ntasks-per-node=1", "env"]
                assert "--num_machines" in launcher and launcher[launcher.index("--num_processes") + 1] == "12"
                assert launcher[launcher.index("--main_process_ip") + 1] == "node-0"
            if step.words[0] == "train-classifier":
                assert parsed.num_nodes == 2 and launcher[:3] == ["srun", "--nodes=2", "--ntasks-per-node=1"]
                assert launcher[launcher.index("--rdzv-endpoint") + 1] == "node-0:29500"
            assert parsed == step.config, (name, words)
    local = tmp_path / "local"
    assert darling("pipeline", "--preset", "paper", "-o", local).returncode == 0
    assert not (local / SLURM_DIR).exists() and "--num-nodes" not in (local / "commands.sh").read_text()


def test_ray_launcher_generates_on_the_cluster_and_writes_a_ray_job(tmp_path):
    """`--launcher ray`: every generating command of commands.sh gets --engine ray --ray-address auto (each line still
    parses to its step's config), training stays as it was, and RUN/ray/submit.sh submits commands.sh as a Ray job."""
    from darling.cli.main import app
    from darling.cli.options import parse_argv
    from darling.pipeline.launch_ray import RAY_DIR, SUBMIT

    run = tmp_path / "run"
    result = darling("pipeline", "--preset", "paper", "--launcher", "ray", "-o", run)
    assert result.returncode == 0 and f"bash {run / RAY_DIR / SUBMIT}" in result.stdout, result.stderr
    submit = (run / RAY_DIR / SUBMIT).read_text()
    assert "ray job submit" in submit and f"-- bash {run / 'commands.sh'}" in submit
    assert subprocess.run(["bash", "-n"], input=submit, text=True).returncode == 0
    config = build_config("paper", run, launcher="ray")
    generating = {"datagen", "labels", "eval-math", "eval-novelty"}
    for stage in blocks(Plan(config)):
        for (_, words), step in zip(darling_commands("\n".join(stage.lines), run), stage.steps, strict=True):
            parsed, _ = parse_argv(app, words)
            assert parsed == step.config
            on_ray = getattr(parsed, "engine", None) == "ray" and parsed.ray_address == "auto"
            assert on_ray == (stage.name in generating and step.words[0] != "serve-reward-model"), (stage.name, words)
    local = build_config("paper", tmp_path / "local")
    assert all(getattr(s.config, "engine", "vllm") != "ray" for stage in blocks(Plan(local)) for s in stage.steps)
