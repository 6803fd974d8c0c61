"""Final answers: find them in responses and references, and compare them with math-verify.

math-verify does the mathematics (LaTeX and plain-expression parsing, numeric and symbolic equality). This
module only decides *which text* to hand it: the last ``\\boxed{}`` when there is one, because a model's
final answer is conventionally boxed and math-verify alone would pick an arbitrary expression from a long
solution; and a short string wrapped as ``\\boxed{...}`` so math-verify reads it as LaTeX.
"""

from __future__ import annotations

import logging
import re
import signal
import threading
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

# "\boxed{", "\boxed {" and "\fbox{" all open a box; the content is found by brace matching below because a
# regex cannot balance the braces of "\boxed{\frac{1}{2}}".
_BOX_OPEN = re.compile(r"\\(?:boxed|fbox)\s*\{")
# GSM8K references end with "#### <number>".
_GSM8K_ANSWER = re.compile(r"####\s*(.+?)\s*$", re.DOTALL)
# A comma between digit groups ("1,000"), not the comma of a list ("1,2").
_THOUSANDS_COMMA = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_OPENING = {")": "(", "]": "[", "}": "{"}
SHORT_REFERENCE_CHARS = 100
# A comparison that times out counts as "not equal"; math-verify's warning for each one is noise on stderr.
logging.getLogger("math_verify").setLevel(logging.ERROR)


def _timeout(seconds: int) -> int | None:
    # math-verify enforces its timeouts with signal.alarm, which raises outside the main thread.
    return seconds if threading.current_thread() is threading.main_thread() else None


def _boxed_contents(text: str) -> list[str]:
    """Contents of the outermost boxes in ``text``, in order (unclosed boxes are ignored)."""
    found: list[str] = []
    pos = 0
    while match := _BOX_OPEN.search(text, pos):
        depth, i = 1, match.end()
        while i < len(text) and depth:
            char = text[i]
            if char == "\\":  # "\{" and "\}" are literal braces in LaTeX, not grouping
                i += 2
                continue
            depth += {"{": 1, "}": -1}.get(char, 0)
            i += 1
        if depth:
            pos = match.end()
            continue
        content = text[match.end() : i - 1].strip()
        if content:
            found.append(content)
        pos = i  # skip boxes nested inside this one: the outer box is the answer
    return found


def _parse(text: str) -> list[Any]:
    from math_verify import parse

    return parse(text, parsing_timeout=_timeout(5))


def _verify(gold: list[Any], pred: list[Any], seconds: int = 5) -> bool:
    from math_verify import verify

    return bool(verify(gold, pred, timeout_seconds=_timeout(seconds)))


_PROBE_VALUES = (2, 3, 5, 7)  # values substituted for an answer's free symbols (same name -> same value)
_PROBE_VALUES_2 = (4, 6, 8, 9)  # a second point: tells a constant from an expression that varies
_PROBE_SECONDS = 0.5  # sympy can take forever on e.g. n!^{n!}: a probe that runs out proves nothing


class _ProbeTimeout(Exception):
    pass


@contextmanager
def _time_limit(seconds: float):
    """SIGALRM-based limit (main thread only, like math-verify's); elsewhere the probe is not attempted."""

    def expire(signum, frame):
        raise _ProbeTimeout

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@lru_cache(maxsize=65536)
def _probe(answer: str, values: tuple[int, ...] = _PROBE_VALUES) -> tuple[frozenset[str], complex] | None:
    """(free symbol names, value with those symbols set to small integers); None unless a finite number.

    Two expressions in the same variables that are equal as functions take the same value at every point,
    so different probe values prove two answers different without asking sympy for a symbolic proof
    (which can take seconds per comparison and dominates pairing time on answers like sums and binomials).
    """
    parsed = _parse_answer(answer)
    if not parsed or not hasattr(parsed[0], "free_symbols"):
        return None
    if threading.current_thread() is not threading.main_thread():
        return None
    expr = parsed[0]
    try:
        names = sorted({str(s) for s in expr.free_symbols})
        if len(names) > len(values):
            return None
        subs = {s: values[names.index(str(s))] for s in expr.free_symbols}
        with _time_limit(_PROBE_SECONDS):
            value = complex(expr.subs(subs).doit().evalf(15))
    except Exception:  # sympy raises many types on sets, relations, unevaluable sums; and _ProbeTimeout
        return None
    if value != value or abs(value) == float("inf"):
        return None
    return frozenset(names), value


def _clearly_different(a: str, b: str) -> bool:
    pa, pb = _probe(a), _probe(b)
    if pa is None or pb is None:
        return False
    if pa[0] != pb[0]:
        # A constant against an expression that varies with its variables ("10" vs "2^{n-1}"): different.
        # Other mismatches ("No" is N*o, "\\text{No}" one symbol) are left to math-verify.
        varying = b if not pa[0] else a if not pb[0] else None
        other = _probe(varying, _PROBE_VALUES_2) if varying else None
        return other is not None and _far(other[1], (pb if varying == b else pa)[1])
    return _far(pa[1], pb[1])


def _far(x: complex, y: complex) -> bool:
    return abs(x - y) > 1e-3 * max(1.0, abs(x), abs(y))


def extract_final_answer(text: str) -> str | None:
    """The last ``\\boxed{}`` content of ``text``, else the answer math-verify extracts, else None."""
    if not text or not text.strip():
        return None
    boxed = _boxed_contents(text)
    if boxed:
        answer = boxed[-1]
        while _BOX_OPEN.match(answer) and (inner := _boxed_contents(answer)):  # "\boxed{\boxed{2}}"
            answer = inner[-1]
        return answer
    parsed = _parse(text)
    if len(parsed) >= 2:
        return _trim_match(str(parsed[1])) or None
    return None


def _trim_match(match: str) -> str:
    """math-verify's matched string can carry the sentence around it ("1/2." or "20)."): drop trailing
    punctuation and closing brackets that open nowhere in the match."""
    match = match.strip().rstrip(".,;:!? ")
    while match and match[-1] in _OPENING and match.count(match[-1]) > match.count(_OPENING[match[-1]]):
        match = match[:-1].rstrip(".,;:!? ")
    return match


def reference_from_text(text: str, max_chars: int | None = SHORT_REFERENCE_CHARS) -> str | None:
    """A reference field as a final answer: a GSM8K ``#### N`` tail, the last ``\\boxed{}`` of a worked
    solution, or the text itself when it is short enough to be an answer rather than a solution."""
    text = text.strip()
    if not text:
        return None
    if match := _GSM8K_ANSWER.search(text):
        answer = _THOUSANDS_COMMA.sub("", match.group(1).splitlines()[0].strip())
        if answer:
            return answer
    boxed = _boxed_contents(text)
    if boxed:
        return boxed[-1]
    if max_chars is None or len(text) <= max_chars:
        return text
    return None


def _normalise(answer: str) -> str:
    """Loose string form for answers math-verify cannot parse (e.g. "Yes", "\\text{No}")."""
    answer = re.sub(r"\\text\{([^{}]*)\}", r"\1", answer)
    answer = re.sub(r"\\[,;!: ]|\\left|\\right|\$|\s+", "", answer)
    return answer.rstrip(".").lower()


@lru_cache(maxsize=65536)
def _parse_answer(answer: str) -> tuple[Any, ...]:
    """math-verify's parse of a bare final answer; boxing makes it read as LaTeX (``2^{n-1}``) while
    math-verify still normalises plain forms (``2^(n-1)``, ``0.5``)."""
    parsed = _parse(f"\\boxed{{{answer}}}") or _parse(f"${answer}$")
    return tuple(parsed)


@lru_cache(maxsize=262144)
def _equivalent(a: str, b: str) -> bool:
    gold, pred = _parse_answer(a), _parse_answer(b)
    if not gold or not pred:
        return _normalise(a) == _normalise(b)
    if _clearly_different(a, b):
        return False
    # verify(gold, pred) is not symmetric (sets, intervals, equations); clustering needs a symmetric relation.
    # A shorter timeout than grading's: a comparison that times out is "not equivalent", i.e. one pair fewer.
    return _verify(list(gold), list(pred), 2) or _verify(list(pred), list(gold), 2)


def answers_equivalent(a: str, b: str) -> bool:
    """Whether two final-answer strings are mathematically the same (math-verify), e.g. ``\\frac{1}{2}``
    and ``0.5``. Results are cached: datagen compares the same few answers many times."""
    a, b = a.strip(), b.strip()
    if a == b:
        return True
    if not a or not b:
        return False
    return _equivalent(*sorted((a, b)))


@lru_cache(maxsize=262144)
def _answer_matches(reference: str, extracted: str) -> bool:
    # Cached: many responses to one problem reach the same answer, and symbolic verification is the slow part.
    gold, pred = _parse_answer(reference), _parse_answer(extracted)
    if not gold or not pred:
        return _normalise(reference) == _normalise(extracted)
    return _verify(list(gold), list(pred))


def is_correct(reference: str | None, response: str, extracted: str | None = None) -> bool | None:
    """math-verify's verdict on ``response`` against the reference answer; None without a reference.

    With ``extracted`` (the response's final answer) only that answer is judged, so an intermediate result
    elsewhere in the response cannot count as the answer."""
    if reference is None or not reference.strip():
        return None
    reference = reference.strip()
    if extracted is not None and extracted.strip():
        return _answer_matches(reference, extracted.strip())
    gold = list(_parse_answer(reference))
    pred = _parse(response) if response else []
    if not gold:
        # An answer math-verify cannot read at all: the best remaining evidence is a literal match.
        found = extract_final_answer(response or "")
        return found is not None and _normalise(found) == _normalise(reference)
    return bool(pred) and _verify(gold, pred)
