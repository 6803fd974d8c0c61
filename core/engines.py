"""Generation engines behind one small interface: chat requests in, completions (or a recorded failure) out.

- ``hf``: transformers ``generate`` in this process (CPU default; SmolLM2-135M-Instruct on a laptop).
- ``openai``: any OpenAI-compatible server (``vllm serve``, SGLang, hosted APIs) with a concurrency limit,
  timeouts and bounded retries with backoff; the API key is read from an environment variable and never
  written anywhere.
- ``vllm``: one vLLM server process per model, started and stopped by the engine, each with its own parallelism
  and memory settings (``darling.core.vllm_engine``; GPUs, or vLLM's CPU build).
- ``vllm-offline``: the in-process ``vllm.LLM`` engine (one model per process is safest: see ``vllm``).
- ``ray``: vLLM replicas on a Ray cluster through Ray Data's LLM processor (``darling.core.ray_engine``).

A request that cannot be served after its retries comes back with ``error`` set and no completions: the
caller records it as failed and a rerun retries it. Nothing here turns a failure into text.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Sequence
from typing import Any, cast

from darling.core.devices import resolve_device
from darling.core.engine_api import ENGINE_NAMES, ChatRequest, ChatResult, Completion, Engine, check_request
from darling.core.engine_config import EngineConfig, engine_options
from darling.core.errors import UserInputError
from darling.core.local_models import resolve_model
from darling.core.openai_engine import OpenAIEngine
from darling.core.ray_engine import RayDataEngine
from darling.core.vllm_engine import VLLMServerEngine


def _resolve(model: str) -> str:

    return resolve_model(model)


class HFEngine:
    """transformers ``generate`` in this process, one request at a time (the CPU / small-model engine).

    Per request: one ``generate`` call with ``num_return_sequences=n`` (greedy at temperature 0: computed
    once, repeated n times); ``torch.manual_seed(seed)`` first when the request has a seed, so its texts do
    not depend on what ran before. ``top_k`` is off, as in the OpenAI/vLLM semantics. ``choices``: each
    choice (followed by EOS, so a choice that is a prefix of another is not favoured) is scored by its
    log-likelihood after the prompt; temperature 0 takes the best, otherwise samples from
    softmax(loglik / temperature). ``regex`` is refused: constrained decoding needs a server or vLLM.
    """

    name = "hf"

    def __init__(
        self, device: str = "auto", dtype: str = "float32", threads: int | None = None, trust_remote_code: bool = False
    ):
        self.device, self.dtype, self.threads = resolve_device(device), dtype, threads
        self.trust_remote_code = trust_remote_code
        self._model_name: str | None = None
        self._model: Any = None
        self._tokenizer: Any = None

    def _load(self, model: str) -> None:
        if self._model_name == model:
            return
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.close()
        path = _resolve(model)
        dtype = "auto" if self.dtype == "auto" else getattr(torch, self.dtype, None)
        if not (dtype == "auto" or isinstance(dtype, torch.dtype)):
            raise UserInputError(f"hf engine: unknown dtype {self.dtype!r} (float32, bfloat16, float16, auto)")
        try:
            tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=self.trust_remote_code)
            lm = AutoModelForCausalLM.from_pretrained(
                path, dtype=dtype, use_safetensors=True, trust_remote_code=self.trust_remote_code
            )
        except OSError as exc:
            raise UserInputError(f"{model}: cannot load the model ({exc})") from None
        # As the Module it is: typeshed cannot bind PreTrainedModel.to, a functools.wraps of Module.to.
        lm_module = cast(torch.nn.Module, lm)
        self._tokenizer, self._model, self._model_name = tokenizer, lm_module.to(self.device).eval(), model
        eos = lm.generation_config.eos_token_id
        eos = [eos] if isinstance(eos, int) else list(eos or [])
        self._eos = set(eos) | ({tokenizer.eos_token_id} if tokenizer.eos_token_id is not None else set())
        self._pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else min(self._eos)

    def close(self) -> None:
        if self._model is not None:
            self._model = self._tokenizer = self._model_name = None
            _free_accelerator_memory()

    def run(self, model: str, requests: Sequence[ChatRequest], on_result: Callable[[ChatResult], None]) -> None:
        for request in requests:
            check_request(request)
            if request.regex is not None:
                raise UserInputError("the hf engine cannot follow a regex; use --engine openai/vllm or choices")
        import torch
        from jinja2 import TemplateError

        oom = getattr(torch, "OutOfMemoryError", torch.cuda.OutOfMemoryError)
        self._load(model)
        if self.threads:
            torch.set_num_threads(self.threads)
        for request in requests:
            try:
                result = self._serve(request)
            except (TemplateError, oom) as exc:  # this request's problem, not the run's
                _free_accelerator_memory()
                result = ChatResult(request, error=f"{type(exc).__name__}: {exc}")
            on_result(result)

    def _prompt_ids(self, request: ChatRequest):
        text = self._tokenizer.apply_chat_template(list(request.messages), tokenize=False, add_generation_prompt=True)
        return self._tokenizer(text, return_tensors="pt", add_special_tokens=False).input_ids.to(self.device)

    def _serve(self, request: ChatRequest) -> ChatResult:
        import torch

        s = request.sampling
        if s.seed is not None:
            torch.manual_seed(s.seed)
        prompt = self._prompt_ids(request)
        with torch.inference_mode():
            if request.choices is not None:
                return ChatResult(request, self._choose(request, prompt))
            sample = s.temperature > 0
            out = self._model.generate(
                prompt,
                attention_mask=torch.ones_like(prompt),
                do_sample=sample,
                temperature=s.temperature if sample else None,
                top_p=s.top_p if sample else None,
                top_k=0 if sample else None,
                max_new_tokens=s.max_tokens,
                num_return_sequences=s.n if sample else 1,
                pad_token_id=self._pad,
            )
        completions = [self._completion(row[prompt.shape[1] :].tolist()) for row in out]
        return ChatResult(request, tuple(completions * (1 if sample else s.n)))

    def _completion(self, tokens: list[int]) -> Completion:
        end = next((i for i, t in enumerate(tokens) if t in self._eos), None)
        if end is not None:
            tokens = tokens[: end + 1]
        text = self._tokenizer.decode(tokens, skip_special_tokens=True)
        return Completion(text, "stop" if end is not None else "length", len(tokens))

    def _choose(self, request: ChatRequest, prompt) -> tuple[Completion, ...]:
        import torch

        s, tok, choices = request.sampling, self._tokenizer, request.choices
        assert choices is not None  # _serve asks this only of requests with choices
        eos = tok.eos_token_id if tok.eos_token_id is not None else min(self._eos)
        options = [tok(c, add_special_tokens=False).input_ids + [eos] for c in choices]
        width = max(map(len, options))
        p = prompt.shape[1]
        batch = torch.full((len(options), p + width), self._pad, dtype=torch.long, device=self.device)
        mask = torch.zeros_like(batch)
        for i, ids in enumerate(options):
            batch[i, :p], batch[i, p : p + len(ids)] = prompt[0], torch.tensor(ids, device=self.device)
            mask[i, : p + len(ids)] = 1
        logprobs = torch.log_softmax(self._model(batch, attention_mask=mask).logits[:, p - 1 : -1].float(), dim=-1)
        picked = logprobs.gather(-1, batch[:, p:, None])[..., 0] * mask[:, p:]
        scores = picked.sum(dim=1).cpu()
        if s.temperature > 0:
            indices = torch.multinomial(torch.softmax(scores / s.temperature, dim=0), s.n, replacement=True).tolist()
        else:
            indices = [int(scores.argmax())] * s.n
        return tuple(Completion(choices[i], "stop", len(options[i])) for i in indices)


def _free_accelerator_memory() -> None:
    gc.collect()
    try:
        import torch
    except ImportError:
        return
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


class OfflineVLLMEngine:
    """``vllm-offline``: the in-process ``vllm.LLM`` engine, one ``LLM`` per model, requests sent ``chunk_size``
    at a time. A second model replaces the first in the same process, freed by garbage collection only; the
    ``vllm`` engine (a server process per model) frees each model with its process.

    Structured output uses ``SamplingParams(structured_outputs=StructuredOutputsParams(choice=/regex=))``
    (vLLM >= 0.12; the older ``guided_decoding`` was removed). A chunk vLLM rejects (e.g. a prompt longer
    than ``max_model_len``) is retried one request at a time, so only the offending requests fail.
    ``llm_kwargs`` go to ``vllm.LLM`` as they are (``enforce_eager``, ``kv_cache_memory_bytes``, ...).
    """

    name = "vllm-offline"

    def __init__(
        self,
        tensor_parallel_size: int = 1,
        dtype: str = "auto",
        max_model_len: int | None = None,
        gpu_memory_utilization: float = 0.9,
        seed: int = 0,
        trust_remote_code: bool = False,
        llm_kwargs: dict[str, Any] | None = None,
        chunk_size: int = 1024,
    ):
        self.options: dict[str, Any] = {
            "tensor_parallel_size": tensor_parallel_size,
            "dtype": dtype,
            "gpu_memory_utilization": gpu_memory_utilization,
            "seed": seed,
            "trust_remote_code": trust_remote_code,
            **({"max_model_len": max_model_len} if max_model_len else {}),
            **(llm_kwargs or {}),
        }
        self.chunk_size = chunk_size
        self._model_name: str | None = None
        self._llm: Any = None

    @staticmethod
    def _vllm():
        try:
            import vllm
        except ImportError:
            raise UserInputError(
                "the vllm-offline engine needs vLLM in this environment: pip install 'darling[gpu]'"
            ) from None
        return vllm

    def _load(self, model: str) -> Any:
        vllm = self._vllm()
        if self._model_name != model:
            self.close()
            self._llm = vllm.LLM(model=_resolve(model), **self.options)
            self._model_name = model
        return self._llm

    def close(self) -> None:
        if self._llm is not None:
            self._llm = self._model_name = None
            _free_accelerator_memory()

    def _params(self, request: ChatRequest):
        from vllm import SamplingParams
        from vllm.sampling_params import StructuredOutputsParams

        s = request.sampling
        structured = None
        if request.choices is not None:
            structured = StructuredOutputsParams(choice=list(request.choices))
        elif request.regex is not None:
            structured = StructuredOutputsParams(regex=request.regex)
        return SamplingParams(
            n=s.n,
            temperature=s.temperature,
            top_p=s.top_p,
            max_tokens=s.max_tokens,
            seed=s.seed,
            structured_outputs=structured,
        )

    def run(self, model: str, requests: Sequence[ChatRequest], on_result: Callable[[ChatResult], None]) -> None:
        for request in requests:
            check_request(request)
        llm = self._load(model)
        rejected: tuple[type[BaseException], ...] = (ValueError,)
        try:  # vLLM >= 0.2x raises its own request errors, not ValueError
            from vllm.exceptions import VLLMClientError

            rejected = (ValueError, VLLMClientError)
        except ImportError:
            pass
        for start in range(0, len(requests), self.chunk_size):
            chunk = list(requests[start : start + self.chunk_size])
            try:
                messages = [list(r.messages) for r in chunk]
                outputs = llm.chat(messages, sampling_params=[self._params(r) for r in chunk], use_tqdm=False)
            except rejected as exc:
                if len(chunk) == 1:
                    on_result(ChatResult(chunk[0], error=f"{type(exc).__name__}: {exc}"))
                    continue
                for request in chunk:  # find the offending requests; the others still run
                    self.run(model, [request], on_result)
                continue
            for request, output in zip(chunk, outputs, strict=True):
                completions = tuple(
                    Completion(o.text, o.finish_reason or "length", len(o.token_ids))
                    for o in sorted(output.outputs, key=lambda o: o.index)
                )
                on_result(ChatResult(request, completions))


def make_engine(name: str, **options: Any) -> Engine:
    """An engine by name (``hf``, ``openai``, ``vllm``, ``vllm-offline``, ``ray``) with its constructor options."""
    if name == "hf":
        cls: type = HFEngine
    elif name == "openai":
        cls = OpenAIEngine
    elif name == "vllm":
        cls = VLLMServerEngine
    elif name == "vllm-offline":
        cls = OfflineVLLMEngine
    elif name == "ray":
        cls = RayDataEngine
    else:
        raise UserInputError(f"unknown engine {name!r}: choose one of {', '.join(ENGINE_NAMES)}")
    try:
        return cls(**options)
    except TypeError as exc:  # an unknown or missing engine option
        raise UserInputError(f"engine {name}: {exc}") from None


def build_engine(settings: EngineConfig, options: dict[str, Any] | None = None) -> Engine:
    """The engine ``settings`` name, with ``options`` (default: ``engine_options(settings)``)."""
    return make_engine(settings.engine, **(engine_options(settings) if options is None else options))
