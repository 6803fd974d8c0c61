"""What tests/scripts/verl_agent_loop_script.py sends through verl's agent loops: per prompt the responses the
stand-in LLM hands out in order (n = 4 in training). Groups repeat answers, so DARLING's reward differs from the
quality; validation prompts repeat their first response, so a hook that grouped verl's validation padding (copies of
the first rows, same uid) with the real rows would lower their reward."""

QUESTIONS = {
    "What is 2 + 3?": "5",
    "What is 10 - 4?": "6",
    "What is 3 x 3?": "9",
    "fails": "1",
    "What is 7 + 1?": "8",
    "What is 9 - 7?": "2",
    "What is 2 x 2?": "4",
}
TRAINING = {
    "What is 2 + 3?": [
        "2 + 3 = \\boxed{5}",
        "2 + 3 = \\boxed{5}",
        "Count up from 2: 3, 4, 5. \\boxed{5}",
        "The answer is \\boxed{6}",
    ],
    "What is 10 - 4?": ["\\boxed{6}", "\\boxed{6}", "\\boxed{6}", "Take four away from ten to get \\boxed{6}."],
    "What is 3 x 3?": ["3 x 3 = \\boxed{9}", "Three threes make nine: \\boxed{9}", "\\boxed{6}", "\\boxed{9}"],
}
FAILING = {"fails": ["\\boxed{1}", "\\boxed{1}", "\\boxed{1}", "\\boxed{1}"]}  # its request 2 is dropped
VALIDATION = {
    "What is 7 + 1?": ["\\boxed{8}", "\\boxed{8}"],
    "What is 9 - 7?": ["\\boxed{3}", "\\boxed{3}"],
    "What is 2 x 2?": ["2 x 2 = \\boxed{4}", "2 x 2 = \\boxed{4}"],
}
