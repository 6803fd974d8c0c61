"""The ``hf`` engine: transformers ``generate`` in this process (CPU default; SmolLM2-135M-Instruct on a laptop).

Requests that sample alike (temperature, top-p, max tokens) are generated together, up to ``max_batch_rows`` rows
(a request's ``n`` answers are ``n`` rows), left-padded: each decoding step reads the weights once for all of them.
On the main job's held-out eval novelty requests (SmolLM2-135M, 24 prompts x 8, one thread) that is 2.52x faster
than one request a batch (``bench/hf_engine_batching.py``).

Sampling is the Gumbel-max trick: temperature and top-p shape the logits as ``generate`` would, then each request adds
Gumbel noise drawn from its own ``torch.Generator`` (seeded by the request's seed) and the argmax is taken. That is a
draw from the same distribution as ``do_sample``, but a request's texts depend on its seed only, not on which
requests share its batch or ran before it: a rerun, a resumed run or another batch size asks for the same samples,
and every model of a paired comparison draws the same noise.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Iterator, Sequence
from itertools import groupby
from typing import Any, cast

from darling.core.devices import free_accelerator_memory, resolve_device
from darling.core.engine_api import ChatRequest, ChatResult, Completion, check_request
from darling.core.errors import UserInputError
from darling.core.local_models import resolve_model


def _batches(requests: Sequence[ChatRequest], max_rows: int) -> Iterator[list[ChatRequest]]:
    """Consecutive requests that sample alike, at most ``max_rows`` rows (answers) a batch; choices alone."""

    def kind(request: ChatRequest) -> tuple:
        s = request.sampling
        return (request.choices is not None, s.temperature, s.top_p, s.max_tokens)

    for (choices, *_), group in groupby(requests, key=kind):
        batch: list[ChatRequest] = []
        rows = 0
        for request in group:
            if batch and (choices or rows + _rows(request) > max_rows):
                yield batch
                batch, rows = [], 0
            batch.append(request)
            rows += _rows(request)
        if batch:
            yield batch


def _rows(request: ChatRequest) -> int:
    return request.sampling.n if request.sampling.temperature > 0 else 1


def _generator(device: str, seed: int | None):
    import torch

    try:
        generator = torch.Generator(device)
    except RuntimeError:  # a device without generators of its own (meta, the tests' stand-in) draws on the CPU
        generator = torch.Generator()
    if seed is None:
        generator.seed()
    else:
        generator.manual_seed(seed)
    return generator


class _GumbelNoise:
    """A logits processor: each request's rows get Gumbel noise from that request's generator (see the module)."""

    def __init__(self, generators: list[Any], rows: list[int]):
        self.generators, self.rows = generators, rows

    def __call__(self, input_ids, scores):
        import torch

        pairs = zip(self.generators, self.rows, strict=True)
        noise = [torch.rand((n, scores.shape[-1]), generator=g, device=g.device) for g, n in pairs]
        uniform = torch.cat(noise).to(scores.device).clamp_(min=torch.finfo(torch.float32).tiny)
        return scores.float() - torch.log(-torch.log(uniform))


class HFEngine:
    """transformers ``generate`` in this process, alike requests batched (see the module).

    Greedy requests (temperature 0) are computed once and repeated n times. ``top_k`` is off, as in the
    OpenAI/vLLM semantics. ``choices``: each choice (followed by EOS, so a choice that is a prefix of another is not
    favoured) is scored by its log-likelihood after the prompt; temperature 0 takes the best, otherwise samples from
    softmax(loglik / temperature). ``regex`` is refused: constrained decoding needs a server or vLLM.
    """

    name = "hf"

    def __init__(
        self,
        device: str = "auto",
        dtype: str = "float32",
        threads: int | None = None,
        trust_remote_code: bool = False,
        max_batch_rows: int = 64,
    ):
        self.device, self.dtype, self.threads = resolve_device(device), dtype, threads
        self.trust_remote_code, self.max_batch_rows = trust_remote_code, max_batch_rows
        self._model_name: str | None = None
        self._model: Any = None
        self._tokenizer: Any = None

    def _load(self, model: str) -> None:
        if self._model_name == model:
            return
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.close()
        path = resolve_model(model)
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
            free_accelerator_memory()

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
        for batch in _batches(requests, self.max_batch_rows):
            try:
                results = self._serve(batch)
            except (TemplateError, oom) as exc:
                free_accelerator_memory()
                if len(batch) > 1:  # one request's problem, not its batch's: each alone, so only it fails
                    self.run(model, batch[:1], on_result)
                    self.run(model, batch[1:], on_result)
                    continue
                results = [ChatResult(batch[0], error=f"{type(exc).__name__}: {exc}")]
            for result in results:
                on_result(result)

    def _prompt_ids(self, request: ChatRequest) -> list[int]:
        text = self._tokenizer.apply_chat_template(list(request.messages), tokenize=False, add_generation_prompt=True)
        return self._tokenizer(text, add_special_tokens=False).input_ids

    def _serve(self, batch: list[ChatRequest]) -> list[ChatResult]:
        import torch

        prompts = [self._prompt_ids(r) for r in batch]
        with torch.inference_mode():
            if batch[0].choices is not None:
                if batch[0].sampling.seed is not None:
                    torch.manual_seed(batch[0].sampling.seed)
                return [ChatResult(batch[0], self._choose(batch[0], prompts[0]))]
            rows = [_rows(r) for r in batch]
            out = self._generate(batch, prompts, rows)
        results, start = [], 0
        for request, n in zip(batch, rows, strict=True):
            completions = [self._completion(row.tolist()) for row in out[start : start + n]]
            results.append(ChatResult(request, tuple(completions * (request.sampling.n // n))))
            start += n
        return results

    def _generate(self, batch: list[ChatRequest], prompts: list[list[int]], rows: list[int]):
        """The new tokens of every row (a request's rows together), prompts left-padded to one width."""
        import torch
        from transformers import LogitsProcessorList, TemperatureLogitsWarper, TopPLogitsWarper

        width = max(map(len, prompts))
        ids = torch.full((len(prompts), width), self._pad, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for i, p in enumerate(prompts):
            ids[i, width - len(p) :], mask[i, width - len(p) :] = torch.tensor(p), 1
        repeats = torch.tensor(rows)
        ids, mask = (t.repeat_interleave(repeats, 0).to(self.device) for t in (ids, mask))
        s = batch[0].sampling
        processors = LogitsProcessorList()
        if s.temperature > 0:  # sampling as argmax(shaped logits + Gumbel noise): see the module
            processors.append(TemperatureLogitsWarper(s.temperature))
            if s.top_p < 1.0:
                processors.append(TopPLogitsWarper(s.top_p))
            generators = [_generator(self.device, r.sampling.seed) for r in batch]
            processors.append(_GumbelNoise(generators, rows))
        # The model's own settings (a repetition penalty, say) kept, as vLLM keeps them: copied here, not left to how a
        # transformers release merges them into a passed config; its sampling ones cleared (the processors sample).
        config = copy.deepcopy(self._model.generation_config)
        config.update(do_sample=False, temperature=None, top_p=None, top_k=None, num_return_sequences=1)
        config.update(max_new_tokens=s.max_tokens, pad_token_id=self._pad, eos_token_id=sorted(self._eos))
        out = self._model.generate(ids, attention_mask=mask, generation_config=config, logits_processor=processors)
        return out[:, width:]

    def _completion(self, tokens: list[int]) -> Completion:
        end = next((i for i, t in enumerate(tokens) if t in self._eos), None)
        if end is not None:
            tokens = tokens[: end + 1]
        text = self._tokenizer.decode(tokens, skip_special_tokens=True)
        return Completion(text, "stop" if end is not None else "length", len(tokens))

    def _choose(self, request: ChatRequest, prompt_ids: list[int]) -> tuple[Completion, ...]:
        import torch

        s, choices = request.sampling, request.choices
        assert choices is not None  # _serve asks this only of requests with choices
        lengths, scores = self._choice_scores(prompt_ids, choices)
        if s.temperature > 0:
            indices = torch.multinomial(torch.softmax(scores / s.temperature, dim=0), s.n, replacement=True).tolist()
        else:
            indices = [int(scores.argmax())] * s.n
        return tuple(Completion(choices[i], "stop", lengths[i]) for i in indices)

    def _choice_scores(self, prompt_ids: list[int], choices: Sequence[str]):
        """Each choice's tokens and EOS, their log-likelihood after the prompt: the prompt run once, its cache copied
        to every choice (a judge's prompt is hundreds of tokens, a choice a few)."""
        import torch

        tok = self._tokenizer
        eos = tok.eos_token_id if tok.eos_token_id is not None else min(self._eos)
        options = [tok(c, add_special_tokens=False).input_ids + [eos] for c in choices]
        width, p, k = max(map(len, options)), len(prompt_ids), len(options)
        prompt = self._model(torch.tensor([prompt_ids], device=self.device), use_cache=True, logits_to_keep=1)
        cache = prompt.cache if hasattr(prompt, "cache") else prompt.past_key_values
        cache.batch_repeat_interleave(k)
        batch = torch.full((k, width), self._pad, dtype=torch.long, device=self.device)
        mask = torch.zeros_like(batch)
        for i, ids in enumerate(options):
            batch[i, : len(ids)], mask[i, : len(ids)] = torch.tensor(ids, device=self.device), 1
        seen = torch.cat([torch.ones((k, p), dtype=torch.long, device=self.device), mask], dim=1)
        positions = torch.arange(p, p + width, device=self.device).expand(k, width)
        # transformers >= 5.2x names the cache argument ``cache``; earlier ones ``past_key_values``
        name = "cache" if "cache" in inspect.signature(self._model.forward).parameters else "past_key_values"
        after = self._model(batch, attention_mask=seen, position_ids=positions, **{name: cache}).logits
        # each option token's logits: the prompt's last position for the first, the option's own before it after
        logits = torch.cat([prompt.logits[:, -1:].expand(k, 1, -1), after[:, :-1]], dim=1)
        picked = torch.log_softmax(logits.float(), dim=-1).gather(-1, batch[..., None])[..., 0] * mask
        return [len(o) for o in options], picked.sum(dim=1).cpu()
