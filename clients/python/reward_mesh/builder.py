"""Building `rewardmesh.v1.Task` and `Rollout` messages: one function per task kind, each taking the
prompt (text or chat messages) and the fields of its payload; bad input raises InvalidInputError naming
the argument.

    task = math_task(["\\frac{1}{2}"], prompt="What is 1/2?")
    r = rollout(task, "The answer is \\boxed{0.5}.")
"""

import itertools
import json
import os

from google.protobuf import json_format
from google.protobuf.struct_pb2 import Struct

from ._proto import rollout_pb2
from .errors import InvalidInputError

Task = rollout_pb2.Task
Rollout = rollout_pb2.Rollout

KINDS = ("code", "tool_call", "agent", "custom", "math")

_ids = itertools.count()
_PREFIX = f"py-{os.getpid()}-{os.urandom(3).hex()}"


def _str(name, value, required=False):
    if not isinstance(value, str):
        raise InvalidInputError(f"'{name}' must be a string, got {type(value).__name__}")
    if required and value == "":
        raise InvalidInputError(f"'{name}' is required")
    return value


def _messages(name, messages):
    out = []
    if not isinstance(messages, (list, tuple)):
        raise InvalidInputError(f"'{name}' must be a list of {{'role', 'content'}} messages")
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise InvalidInputError(f"'{name}[{i}]' must be a {{'role': str, 'content': str}} message")
        out.append(rollout_pb2.ChatMessage(role=m["role"], content=content_text(m.get("content", ""))))
    return out


def content_text(content):
    """A message's content as text: a string, or the text parts of a multimodal content list."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type", "text") == "text")
    raise InvalidInputError(f"message content must be a string or a list of parts, got {type(content).__name__}")


def _base(prompt, task_id, domain):
    """A Task with the common fields: `prompt` is a string or a list of chat messages."""
    t = Task(id=_str("id", task_id), domain=_str("domain", domain))
    if isinstance(prompt, str):
        t.prompt = prompt
    elif prompt is not None:
        t.messages.extend(_messages("prompt", prompt))
        t.prompt = "\n".join(m.content for m in t.messages)
    return t


def math_task(answers, *, prompt=None, problem="", answer_type="", tolerance=0.0, answer_format="", id="", domain=""):
    """A MathTask (scored by the `math` service on the final answer). `answers`: one or more references."""
    if isinstance(answers, (str, int, float)):
        answers = [answers]
    if not isinstance(answers, (list, tuple)) or len(answers) == 0:
        raise InvalidInputError("'answers' must be a non-empty list of reference answers")
    t = _base(prompt, id, domain)
    t.math.answers.extend(str(a) for a in answers)
    t.math.problem = _str("problem", problem) or t.prompt
    t.math.answer_type = _str("answer_type", answer_type)
    t.math.tolerance = float(tolerance)
    t.math.answer_format = _str("answer_format", answer_format)
    return t


def code_task(*, test="", entry_point="", io_tests=(), prompt=None, code_prompt="", reference_solution="",
              language="python", time_limit_ms=0, memory_limit_mb=0, id="", domain=""):
    """A CodeTask: HumanEval style (`test` defining `check(candidate)` + `entry_point`) or APPS style
    (`io_tests`: a list of `(stdin, expected_stdout)` pairs or `{'stdin', 'expected_stdout'}` dicts)."""
    if test == "" and len(io_tests) == 0:
        raise InvalidInputError("a code task needs 'test' (with 'entry_point') or 'io_tests'")
    if test != "" and entry_point == "":
        raise InvalidInputError("'entry_point' is required with 'test'")
    t = _base(prompt, id, domain)
    c = t.code
    c.language = _str("language", language)
    c.prompt = _str("code_prompt", code_prompt)
    c.test = _str("test", test)
    c.entry_point = _str("entry_point", entry_point)
    c.reference_solution = _str("reference_solution", reference_solution)
    c.time_limit_ms = int(time_limit_ms)
    c.memory_limit_mb = int(memory_limit_mb)
    for i, io in enumerate(io_tests):
        stdin, out = (io.get("stdin"), io.get("expected_stdout")) if isinstance(io, dict) else tuple(io)
        c.io_tests.add(stdin=_str(f"io_tests[{i}].stdin", stdin), expected_stdout=_str(f"io_tests[{i}].expected_stdout", out))
    return t


def _json(name, value):
    return value if isinstance(value, str) else json.dumps(value)


def tool_call_task(tools, ground_truth, *, prompt=None, expected_response="", format="rlla",
                   possible_answers=None, id="", domain=""):
    """A ToolCallTask. `tools`: the tool schemas (list or JSON text); `ground_truth`: the expected calls as
    `{'name': str, 'arguments': dict}` (ToolRL / RLLA); `format`: "rlla" or "json" (BFCL)."""
    t = _base(prompt, id, domain)
    tc = t.tool_call
    tc.tools_json = _json("tools", tools)
    for i, call in enumerate(ground_truth):
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            raise InvalidInputError(f"'ground_truth[{i}]' must be {{'name': str, 'arguments': dict}}")
        tc.ground_truth.add(name=call["name"], arguments_json=_json(f"ground_truth[{i}]", call.get("arguments", {})))
    tc.expected_response = _str("expected_response", expected_response)
    tc.format = _str("format", format)
    if possible_answers is not None:
        tc.possible_answers_json = _json("possible_answers", possible_answers)
    return t


def agent_task(suite, user_task_id, *, injection_task_id="", attack="", prompt=None, id="", domain=""):
    """An AgentDojo-style AgentTask."""
    t = _base(prompt, id, domain)
    t.agent.suite = _str("suite", suite, required=True)
    t.agent.user_task_id = _str("user_task_id", user_task_id, required=True)
    t.agent.injection_task_id = _str("injection_task_id", injection_task_id)
    t.agent.attack = _str("attack", attack)
    return t


def custom_task(payload=None, *, prompt=None, id="", domain=""):
    """A custom task: any JSON object as payload (services of domain `custom`, or `domain`)."""
    if payload is not None and not isinstance(payload, dict):
        raise InvalidInputError(f"'payload' must be a dict, got {type(payload).__name__}")
    t = _base(prompt, id, domain)
    s = Struct()
    s.update(payload or {})
    t.custom.CopyFrom(s)
    return t


def task_from_json(value, *, name="task"):
    """A Task from its proto JSON (a dict, or JSON text): `{"math": {"answers": ["2"]}, "prompt": "1+1?"}`.
    Field names in camelCase or snake_case, as protobuf's JSON mapping accepts."""
    if isinstance(value, Task):
        return value
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as e:
            raise InvalidInputError(f"'{name}' is not valid JSON: {e}") from None
    if not isinstance(value, dict):
        raise InvalidInputError(f"'{name}' must be a Task as proto JSON (an object), got {type(value).__name__}")
    try:
        return json_format.ParseDict(value, Task())
    except json_format.ParseError as e:
        raise InvalidInputError(f"'{name}' is not a rewardmesh.v1.Task: {e}") from None


def domain_of(task):
    """The routing domain: `task.domain`, or the name of its kind (`math`, `code`, ...)."""
    if task.domain:
        return task.domain
    kind = task.WhichOneof("kind")
    return kind or ""


def next_id(prefix="r"):
    """A rollout id unique in this process (and, with high probability, across processes)."""
    return f"{_PREFIX}-{prefix}{next(_ids)}"


def rollout(task, response, *, id=None, run_id="python", step=0, group_id="", index=0, group_size=1,
            metadata=None, response_tokens=0, policy_version=0):
    """A Rollout of `task` (a Task, or its proto JSON) answered with `response`. `id` defaults to a fresh
    unique id, `group_id` to the id (a group of one), `run_id` to "python" (a NATS subject token)."""
    t = task_from_json(task)
    rid = _str("id", id, required=True) if id is not None else next_id()
    index, group_size = int(index), int(group_size)
    if group_size < 1 or index >= group_size:
        raise InvalidInputError(f"'index' must be < 'group_size' (got index {index}, group_size {group_size})")
    return Rollout(
        id=rid,
        run_id=_str("run_id", run_id, required=True),
        step=int(step),
        group_id=_str("group_id", group_id) or rid,
        index=index,
        group_size=group_size,
        response=_str("response", response),
        policy_version=int(policy_version),
        response_tokens=int(response_tokens),
        task=t,
        metadata={str(k): str(v) for k, v in metadata.items()} if metadata else None,
    )
