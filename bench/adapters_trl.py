"""The Python half of `npm run bench:adapters`: rollouts/s through reward_mesh.trl's reward functions, as
GRPOTrainer calls them (every component function on each batch; the first scores the batch with one
ScoreBatch call per service, the others read the per-batch cache), and the client's CPU time.

Usage: .venv/bin/python bench/adapters_trl.py SPEC.json WINDOW_S — SPEC: {"services": {name: addr},
"components": [...], "rows": [{"prompt", "completion", "task"}]}. Prints {"rollouts", "seconds", "cpuSeconds", "batches"}.
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "clients", "python"))

from reward_mesh import Mesh  # noqa: E402
from reward_mesh.trl import reward_funcs  # noqa: E402

spec = json.load(open(sys.argv[1]))
window = float(sys.argv[2])
rows = spec["rows"]
with Mesh(spec["services"], timeout=120) as mesh:
    funcs = reward_funcs(mesh, spec["components"])
    prompts = [r["prompt"] for r in rows]
    tasks = [r["task"] for r in rows]
    n, batch, t0, c0 = 0, 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - t0 < window:
        # A new batch each time (TRL samples new completions), so the cache is not hit across batches.
        completions = [f"{r['completion']} #{batch}" for r in rows]
        for f in funcs:
            out = f(prompts=prompts, completions=completions, task=tasks)
            assert len(out) == len(rows)
        n += len(rows)
        batch += 1
    print(json.dumps({"rollouts": n, "seconds": time.perf_counter() - t0, "cpuSeconds": time.process_time() - c0,
                      "batches": batch}))
