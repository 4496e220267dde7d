"""The running mesh the tests score against, started by test/python-client.test.ts (`npm test`):
`REWARD_MESH_TEST_SERVICES` (name=host:port,... of a `length` and a `math` service),
`REWARD_MESH_TEST_TRAINER` (host:port of Trainer.ComputeAdvantages), `REWARD_MESH_TEST_TOOL_CALL` (host:port
of a `tool-call` service, kept out of SERVICES), `REWARD_MESH_TEST_GATEWAY` (the
OpenRLHF endpoint's URL). The length service runs with max length 64 and cache length 32."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from reward_mesh.config import parse_services  # noqa: E402


def _need(name):
    value = os.environ.get(name, "")
    if value == "":
        raise RuntimeError(f"{name} is not set: run these tests through test/python-client.test.ts (npm test), which starts the mesh")
    return value


SERVICES = parse_services(_need("REWARD_MESH_TEST_SERVICES"))
TRAINER = _need("REWARD_MESH_TEST_TRAINER")
TOOL_CALL = _need("REWARD_MESH_TEST_TOOL_CALL")
GATEWAY = os.environ.get("REWARD_MESH_TEST_GATEWAY", "")
