"""Run configurations read as the trainer reads them (trainer/src/run/config.ts)."""

import unittest

from tests.mesh import SERVICES, TRAINER

import reward_mesh as rm
from reward_mesh.config import run_config

COMPONENTS = [{"service": "math", "component": "correct", "weight": 1}]


class DynamicSamplingTest(unittest.TestCase):
    def test_spellings_match_the_trainer(self):
        # The trainer: true -> {}, any object (even {}) -> on, false/absent/null -> off.
        for value, expected in ((True, {}), ({}, {}), ({"component": "math/correct"}, {"component": "math/correct"}),
                                (False, None), (None, None)):
            self.assertEqual(run_config({"components": COMPONENTS, "dynamicSampling": value}).dynamic_sampling, expected, value)
        self.assertIsNone(run_config({"components": COMPONENTS}).dynamic_sampling)
        with self.assertRaisesRegex(rm.InvalidInputError, "'dynamicSampling' must be true, false or"):
            run_config({"components": COMPONENTS, "dynamicSampling": "yes"})

    def test_empty_object_turns_it_on_at_the_trainer(self):
        cfg = run_config({"components": COMPONENTS, "dynamicSampling": {}})
        with rm.AdvantagesClient(TRAINER, timeout=30) as t:
            res = t.compute([[[1.0], [1.0]], [[1.0], [0.0]]], estimator="grpo", weights=cfg.weights,
                            dynamic_sampling=cfg.dynamic_sampling)
        # DAPO dynamic sampling drops the group whose rewards are all equal.
        self.assertEqual([g.kept for g in res.groups], [False, True])


class ServicesKeyTest(unittest.TestCase):
    def test_a_typo_in_services_is_an_error(self):
        with self.assertRaisesRegex(rm.InvalidInputError, "'services.maths': the mesh has no service 'maths'"):
            rm.Mesh(SERVICES, timeout=30, service_domains={"maths": ["math", "chat"]})
        with rm.Mesh(SERVICES, timeout=30) as mesh:
            with self.assertRaisesRegex(rm.InvalidInputError, "'services.lenght'"):
                mesh.with_domains({"lenght": ["math"]})
            self.assertEqual(mesh.with_domains({"length": ["math"]}).domains["length"], {"math"})
        with self.assertRaisesRegex(rm.InvalidInputError, "'services' must map"):
            run_config({"components": COMPONENTS, "services": {"math": "math"}})


if __name__ == "__main__":
    unittest.main()
