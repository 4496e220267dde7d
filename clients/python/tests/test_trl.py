"""The TRL adapter called as GRPOTrainer calls reward functions: `f(prompts=..., completions=..., **kwargs)`
with the dataset's other columns as lists (plus completion_ids, trainer_state, or step and run_name as
scalars, depending on the TRL version), standard and
conversational; TRL sums `reward_weights[k] * rewards[k]` ignoring None (NaN) per rollout."""

import math
import unittest

from tests.mesh import SERVICES, TOOL_CALL

import reward_mesh as rm
from reward_mesh import trl


def trl_weighted(funcs, weights, **inputs):
    """What GRPOTrainer does with the functions' outputs: None -> NaN, then a NaN-ignoring weighted sum."""
    per_func = [[math.nan if v is None else v for v in f(**inputs)] for f in funcs]
    return [sum(w * col[i] for w, col in zip(weights, per_func) if not math.isnan(col[i])) for i in range(len(per_func[0]))]


class TrlTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.mesh = rm.Mesh(SERVICES, timeout=30)

    @classmethod
    def tearDownClass(cls):
        cls.mesh.close()

    def test_one_function_per_component_named_service_slash_component(self):
        funcs = trl.reward_funcs(self.mesh)
        self.assertEqual(sorted(f.__name__ for f in funcs), sorted(self.mesh.components))
        self.assertIn("math/correct", [f.__name__ for f in funcs])

    def test_standard_format_with_task_column_and_cache(self):
        funcs = trl.reward_funcs(self.mesh, ["math/correct", "math/format", "length/length"])
        task = {"math": {"answers": ["4"]}}
        # Two prompts x two generations, as GRPOTrainer lays a batch out; `task` is a dataset column.
        inputs = {
            "prompts": ["2+2?", "2+2?", "3+1?", "3+1?"],
            "completions": ["\\boxed{4}", "\\boxed{5}", "The answer is \\boxed{4}", "none"],
            "task": [task, task, task, task],
            "completion_ids": [[1, 2], [1, 2, 3], [1], [4]],
            "trainer_state": object(),
            "step": 3,  # some TRL versions pass the step and run name as scalars
            "run_name": "out",
        }
        correct, fmt, length = (f(**inputs) for f in funcs)
        self.assertEqual(correct, [1.0, 0.0, 1.0, 0.0])
        self.assertEqual(fmt, [1.0, 1.0, 1.0, 0.0])
        self.assertEqual(length, [None, None, None, None])  # length does not score math
        self.assertEqual(funcs[0].scorer.batches_scored, 1)  # three components, one scoring
        rollouts = funcs[0].scorer.rollouts(inputs["prompts"], inputs["completions"], inputs)
        self.assertEqual([(r.group_id, r.index, r.group_size) for r in rollouts], [("g0", 0, 2), ("g0", 1, 2), ("g1", 0, 2), ("g1", 1, 2)])
        self.assertEqual([r.response_tokens for r in rollouts], [2, 3, 1, 1])
        self.assertEqual(rollouts[0].task.prompt, "2+2?")
        inputs["completions"] = ["\\boxed{5}"] * 4
        self.assertEqual(funcs[0](**inputs), [0.0, 0.0, 0.0, 0.0])
        self.assertEqual(funcs[0].scorer.batches_scored, 2)

    def test_conversational_format_and_default_task(self):
        funcs = trl.reward_funcs(self.mesh, ["length/length", "math/correct"])
        prompts = [[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say hi"}]] * 2
        completions = [[{"role": "assistant", "content": "hi"}], [{"role": "assistant", "content": [{"type": "text", "text": "hello"}]}]]
        length, correct = (f(prompts=prompts, completions=completions) for f in funcs)
        self.assertEqual(length, [2.0, 5.0])  # a custom task: length scores it, math does not
        self.assertEqual(correct, [None, None])
        r = funcs[0].scorer.rollouts(prompts, completions, {})[0]
        self.assertEqual([m.role for m in r.task.messages], ["system", "user"])

    def test_conversational_tool_calls_are_scored(self):
        # TRL with transformers >= 5 parses the completion into an assistant message with `tool_calls`;
        # its tool loop appends `tool` messages (and the model's next turn).
        with rm.Mesh({"tool-call": TOOL_CALL}, timeout=30) as mesh:
            names = ["tool-call/format", "tool-call/function_name", "tool-call/parameter_name", "tool-call/parameter_value"]
            funcs = trl.reward_funcs(mesh, names)
            tools = [{"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]
            gold = [{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "get_time", "arguments": {"tz": "CET"}}]
            task = rm.tool_call_task(tools, gold, prompt="Weather and time in Paris?")
            json_task = rm.tool_call_task(tools, gold[:1], prompt="Weather in Paris?", format="json")
            call = {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
            call_text = {"type": "function", "function": {"name": "get_time", "arguments": '{"tz": "CET"}'}}
            wrong = {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Rome"}}}
            completions = [
                [{"role": "assistant", "content": "<think>two calls</think>", "tool_calls": [call, call_text]}],
                [{"role": "assistant", "content": "", "reasoning_content": "one call", "tool_calls": [wrong, call_text]}],
                [{"role": "assistant", "content": "<think>x</think>", "tool_calls": [call, call_text]},
                 {"role": "tool", "name": "get_weather", "content": "22C clear"},
                 {"role": "assistant", "content": "It is sunny."}],
                [{"role": "assistant", "content": "", "tool_calls": [call]}],
            ]
            prompts = ["Weather and time in Paris?"] * 3 + ["Weather in Paris?"]
            rows = [f(prompts=prompts, completions=completions, task=[task] * 3 + [json_task]) for f in funcs]
            fmt, fname, pname, pvalue = rows
            self.assertEqual(fmt[:2], [1.0, 1.0])
            self.assertEqual(fname[:3], [0.5, 0.5, 0.5])
            self.assertEqual(pname[:3], [1.0, 1.0, 1.0])
            self.assertEqual(pvalue[0], 1.5)
            self.assertLess(pvalue[1], 1.5)  # Rome is not Paris
            self.assertEqual(fmt[2], 0.0)  # a later turn follows the calls: not the ToolRL layout
            self.assertEqual((fmt[3], fname[3], pvalue[3]), (1.0, 0.5, 1.5))  # format "json": a JSON list
            r = funcs[0].scorer.rollouts(prompts, completions, {"task": [task] * 3 + [json_task]})
            self.assertEqual(r[0].response, '<think>two calls</think>\n<tool_call>\n{"name": "get_weather", "parameters": '
                             '{"city": "Paris"}}\n{"name": "get_time", "parameters": {"tz": "CET"}}\n</tool_call>')
            self.assertNotIn("22C", r[2].response)  # the tool's answer is not the model's
            self.assertEqual(r[3].response, '[{"name": "get_weather", "arguments": {"city": "Paris"}}]')

    def test_task_builder_and_weights_from_a_run_config(self):
        config = {
            "components": [
                {"service": "math", "component": "correct", "weight": 1},
                {"service": "length", "component": "overlong", "weight": 0.5},
            ],
            "estimator": "corr_grpo",
            "services": {"length": ["custom", "math"]},
        }
        builder = lambda prompt, row: rm.math_task([row["solution"]], prompt=prompt)  # noqa: E731
        funcs, weights = trl.reward_funcs_from_run_config(config, services=SERVICES, task_builder=builder)
        # The same with a Mesh of one's own: the run's `services:` key applies to it too (not to the original).
        funcs2, _ = trl.reward_funcs_from_run_config(config, self.mesh, task_builder=builder)
        self.assertEqual(funcs2[1](prompts=["q"], completions=["x" * 40 + "\\boxed{7}"], solution=["7"]), [-(49 - 32) / 32])
        self.assertEqual(self.mesh.domains["length"], {"code", "tool_call", "agent", "custom"})
        self.assertEqual([f.__name__ for f in funcs], ["math/correct", "length/overlong"])
        self.assertEqual(weights, [1.0, 0.5])
        # The run's `services:` key makes length score math rollouts too; 48 code points is overlong -0.5.
        totals = trl_weighted(funcs, weights, prompts=["q", "q"], completions=["\\boxed{7}", "x" * 40 + "\\boxed{7}"], solution=["7", "7"])
        self.assertEqual(totals, [1.0, 1.0 + 0.5 * (-(49 - 32) / 32)])
        funcs[0].scorer.mesh.close()

    def test_errors(self):
        with self.assertRaisesRegex(rm.InvalidInputError, "'math/accuracy' is not in the mesh"):
            trl.reward_funcs_from_run_config({"components": [{"service": "math", "component": "accuracy", "weight": 1}]}, self.mesh)
        with self.assertRaisesRegex(rm.InvalidInputError, "'components\\[0\\]' is not a preset"):
            trl.reward_funcs_from_run_config({"components": "nope"}, self.mesh)
        (f,) = trl.reward_funcs(self.mesh, ["math/correct"])
        with self.assertRaisesRegex(rm.InvalidInputError, "row 0: 'task' is not a rewardmesh.v1.Task"):
            f(prompts=["p"], completions=["c"], task=[{"mathz": {}}])
        with self.assertRaisesRegex(rm.InvalidInputError, "'prompts' has 2 entries, 'completions' 1"):
            f(prompts=["p", "q"], completions=["c"])


if __name__ == "__main__":
    unittest.main()
