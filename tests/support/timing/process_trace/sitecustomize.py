"""Every Python process started with this folder on PYTHONPATH records, as it exits, its command line and CPU
seconds: one JSON line in the file ``DARLING_PROCESS_TRACE`` names (``process_costs.py`` sets both and sums them by
command). Python imports ``sitecustomize`` at start-up from the path, so the suite's ``darling`` commands, their
launchers and the servers' Python (vLLM's own environment) all write a line. A process ended by SIGKILL, or by a
signal it does not handle, writes none: killed servers are missing, not zero. Needs nothing from the tree measured.
"""

import atexit
import json
import os
import resource
import sys
import time

_started = time.time()
_WATCHED = ("torch", "transformers", "lightning", "trl", "vllm", "matplotlib")  # what a process paid to import


def _record() -> None:
    path = os.environ.get("DARLING_PROCESS_TRACE")
    if not path:
        return
    usage = resource.getrusage(resource.RUSAGE_SELF)
    line = {
        "argv": sys.argv[:6],
        "pid": os.getpid(),
        "wall": round(time.time() - _started, 3),
        "cpu": round(usage.ru_utime + usage.ru_stime, 3),
        "imported": [name for name in _WATCHED if name in sys.modules],
    }
    try:
        with open(path, "a") as out:  # one short append per process: lines from parallel processes stay whole
            out.write(json.dumps(line) + "\n")
    except OSError:
        pass


atexit.register(_record)
