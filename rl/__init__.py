"""The DARLING reward and RL training (issue: darling rl-train)."""
