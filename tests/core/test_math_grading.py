"""Final-answer extraction, reference answers and math-verify equivalence (darling.core.math_grading)."""

from __future__ import annotations

import threading

import pytest

from darling.core.math_grading import answers_equivalent, extract_final_answer, is_correct, reference_from_text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (r"so the answer is $\boxed{\frac{1}{2}}$.", r"\frac{1}{2}"),  # nested braces
        (r"first \boxed{3}, then corrected: \boxed{4}", "4"),  # the last box wins
        (r"\boxed {x^{2}+1}", "x^{2}+1"),
        (r"\fbox{7}", "7"),
        (r"\boxed{\{1, 2\}}", r"\{1, 2\}"),  # escaped braces are not grouping
        (r"\boxed{\boxed{5}}", "5"),
        (r"\boxed{}  \boxed{6}", "6"),  # an empty box is not an answer
        (r"unclosed \boxed{3 and later \boxed{8}", "8"),
    ],
)
def test_extract_boxed(text, expected):
    assert extract_final_answer(text) == expected


def test_extract_falls_back_to_math_verify():
    assert extract_final_answer(r"Therefore the probability is $\frac{1}{2}$.") == r"\frac{1}{2}"
    # math-verify's matched string carries the sentence's full stop; the answer does not.
    assert extract_final_answer("The largest value is 1/2.") == "1/2"
    assert extract_final_answer("The number is 20).") == "20"


@pytest.mark.parametrize("text", ["", "   ", "no mathematics in this sentence"])
def test_extract_nothing(text):
    assert extract_final_answer(text) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("She makes 9 * 2 = $<<9*2=18>>18 every day.\n#### 18", "18"),
        ("Total: 1,000 + 450\n#### 1,450", "1450"),
        ("#### 1,450,000", "1450000"),
        ("#### -3", "-3"),
        (r"Hence $s = \boxed{1.6}$ cm, not \boxed{2}... wait, it is \boxed{1.6}", "1.6"),
        ("  204 ", "204"),
        (r"\frac{-1+\sqrt{17}}{2}, \frac{-1-\sqrt{17}}{2}", r"\frac{-1+\sqrt{17}}{2}, \frac{-1-\sqrt{17}}{2}"),
        ("a long worked solution without a box " * 5, None),
        ("   ", None),
    ],
)
def test_reference_from_text(text, expected):
    assert reference_from_text(text) == expected


def test_reference_length_limit_can_be_lifted():
    long_answer = ", ".join(f"({i},{i + 1})" for i in range(30))
    assert reference_from_text(long_answer) is None
    assert reference_from_text(long_answer, max_chars=None) == long_answer


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (r"\frac{1}{2}", "0.5"),
        ("27.0", "27"),
        ("2^(n-1)", "2^{n-1}"),
        ("1,000", "1000"),
        (r"\sqrt{3}/3", r"\frac{1}{\sqrt{3}}"),
        ("x=2", "2"),
        (r"\text{No}", "No"),  # text answers fall back to a normalised string comparison
        (" 12 ", "12"),
    ],
)
def test_equivalent(a, b):
    assert answers_equivalent(a, b)
    assert answers_equivalent(b, a)


@pytest.mark.parametrize(("a", "b"), [("3", "4"), (r"\frac{1}{2}", "0.51"), ("Yes", "No"), ("2^n", "n^2"), ("", "1")])
def test_not_equivalent(a, b):
    assert not answers_equivalent(a, b)


def test_is_correct():
    assert is_correct(None, r"\boxed{3}") is None
    assert is_correct("", r"\boxed{3}") is None
    assert is_correct("18", "Janet makes $18 a day, so the answer is \\boxed{18}.") is True
    assert is_correct("18", "so the answer is 17") is False
    assert is_correct("27.0", "they meet after 27 miles", extracted="27") is True
    # With an extracted answer only that answer counts, not an intermediate result of the response.
    assert is_correct("5", "first 5, then the answer is 6", extracted="6") is False
    assert is_correct(r"\frac{1}{2}", "", extracted="0.5") is True
    assert is_correct("18", "") is False


def test_works_outside_the_main_thread():
    # math-verify's timeouts use signal.alarm, which only the main thread may set.
    results: list = []
    worker = threading.Thread(
        target=lambda: results.append(
            (
                answers_equivalent("1/4", "0.25"),
                is_correct("5", "the answer is 5"),
                extract_final_answer("it equals $x^3$ here"),
            )
        )
    )
    worker.start()
    worker.join()
    assert results == [(True, True, "x^3")]
