#!/usr/bin/env bash
# The niceness of a test's Ray workers beside the suite's other worker (tests/support/helpers.py RAY_TEST_ENV): the
# verl v0 agent-loop case timed with two busy processes at nice 0 beside it (standing in for the other pytest worker),
# its Ray workers at nice 15 (Ray's default) and at 0, in the order 15, 0, 0, 15. Run from the repo root:
#     bash bench/ray_niceness.sh            # ~11 min on 2 cores
set -uo pipefail
CASE="tests/rl/test_verl_agent_loop.py::test_darling_manager_rewards_whole_groups_through_verl[verl-0.9.1-v0]"
python3 -c "while True: pass" & L1=$!
python3 -c "while True: pass" & L2=$!
trap 'kill $L1 $L2' EXIT
for nice in ${RAY_NICE_ORDER:-15 0 0 15}; do
    start=$(date +%s.%N)
    DARLING_RAY_WORKER_NICENESS=$nice .venv/bin/python -m pytest -n 0 -q -p no:cacheprovider "$CASE" | grep -E "passed|failed"
    echo "nice $nice: $(echo "$(date +%s.%N) - $start" | bc) s"
done
