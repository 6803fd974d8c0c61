"""RL with the DARLING reward: the reward, its TRL and verl entry points, rl-train, the served reward model."""
