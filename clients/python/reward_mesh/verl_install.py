"""Importing this module calls `reward_mesh.verl.install()`: the mesh's estimators (corr_grpo, s_grpo,
reward_mesh) then work in a verl 0.9.1 run's driver, reading the components from the reward loop's
reward_extra_info. For verl's processes: `VERL_USE_EXTERNAL_MODULES=reward_mesh.verl_install` (verl
imports the listed modules in every process that imports verl, the TaskRunner actor running the fit loop
included). See docs/frameworks/verl.md."""

from .verl import install

installed = install()
