"""What tests/scripts/verl_script.py sends through verl: 2 arithmetic prompts (each its own data file, as verl's
preprocessing writes them: both have extra_info index 0) x 4 responses; validation picks 1 response per prompt."""

PROMPTS = [("What is 2 + 3?", "5"), ("What is 10 - 4?", "6")]
RESPONSES = [
    [
        "2 + 3 = \\boxed{5}",
        "Adding gives \\boxed{5}.",
        "The answer is \\boxed{6}",
        "Count up from 2: 3, 4, 5. \\boxed{5}",
    ],
    ["\\boxed{6}", "10 - 4 = \\boxed{6}", "Take four away from ten to get \\boxed{6}.", "I think it is \\boxed{7}"],
]
VALIDATION = [[RESPONSES[0][2]], [RESPONSES[1][1]]]  # val_kwargs.n = 1 (verl's default): one wrong, one right
OPTIONS = {"norm": {"norm": "minmax"}, "floor": {"floor": 0.5}, "combine": {"combine": "add"}}  # each vs the default
