"""Oracle for test/yaml-injection.test.ts: AgentDojo's own way of placing injections (v1.2.x
task_suite.read_suite_file + load_and_inject_default_environment, yaml_loader.ImportLoader and
quoted_presenter), run with the real PyYAML. Reads {"dir", "suite", "cases": [{vector: text}]} as JSON on
stdin; writes one JSON result per case: {"doc": <environment, datetimes as isoformat>} or {"error": "..."}.
"""

import datetime
import json
import os
import sys

import yaml


class ImportLoader(yaml.SafeLoader):
    def __init__(self, stream):
        try:
            self._root = os.path.split(stream.name)[0]
        except AttributeError:
            self._root = os.path.curdir
        super().__init__(stream)


def construct_include(loader, node):
    filename = os.path.abspath(os.path.join(loader._root, str(loader.construct_scalar(node))))
    with open(filename) as f:
        return yaml.load(f, ImportLoader)


yaml.add_constructor("!include", construct_include, ImportLoader)


def quoted_presenter(dumper, data):
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style='"')


yaml.add_representer(str, quoted_presenter)


def read_suite_file(path):
    with open(path) as f:
        return yaml.dump(yaml.load(f, ImportLoader), default_flow_style=False)


def plain(x):
    if isinstance(x, dict):
        return {str(k): plain(v) for k, v in x.items()}
    if isinstance(x, list):
        return [plain(v) for v in x]
    if isinstance(x, (datetime.date, datetime.datetime)):
        return x.isoformat()
    return x


def main():
    req = json.load(sys.stdin)
    suite_dir = os.path.join(req["dir"], req["suite"])
    text = read_suite_file(os.path.join(suite_dir, "environment.yaml"))
    vectors = yaml.safe_load(read_suite_file(os.path.join(suite_dir, "injection_vectors.yaml")))
    defaults = {k: v["default"] for k, v in vectors.items()}
    out = []
    for injections in req["cases"]:
        try:
            doc = yaml.safe_load(text.format(**dict(defaults, **injections)))
            out.append({"doc": plain(doc)})
        except Exception as e:  # noqa: BLE001 -- any failure is upstream failing to load the environment
            out.append({"error": f"{type(e).__name__}: {e}"})
    json.dump(out, sys.stdout)


main()
