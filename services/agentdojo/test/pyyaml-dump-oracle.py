"""Oracle for test/pyyaml-dump.test.ts: what AgentDojo's `tool_result_to_str` prints for a dumped
value, `yaml.safe_dump(value).strip()`, with the real PyYAML. Reads a JSON list of values on stdin, in
which {"$float": "<repr>"} is a Python float, {"$datetime": "<iso>"} a datetime and {"$date": "<iso>"}
a date; writes the JSON list of dumps.
"""

import datetime
import json
import sys

import yaml


def decode(x):
    if isinstance(x, dict):
        if set(x) == {"$float"}:
            return float(x["$float"])
        if set(x) == {"$datetime"}:
            return datetime.datetime.fromisoformat(x["$datetime"])
        if set(x) == {"$date"}:
            return datetime.date.fromisoformat(x["$date"])
        return {k: decode(v) for k, v in x.items()}
    if isinstance(x, list):
        return [decode(v) for v in x]
    return x


json.dump([yaml.safe_dump(decode(v)).strip() for v in json.load(sys.stdin)], sys.stdout)
