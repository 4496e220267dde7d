"""reward-mesh PyTorch learner: the `rewardmesh.v1.Learner` gRPC service for real language-model policies.

A text policy (a built-in decoder-only transformer over bytes, or a Hugging Face causal LM) that samples
completions with behaviour logprobs (`Generate`), applies clipped policy-gradient updates from samples
with precomputed advantages (`TrainStep`: GRPO, Dr. GRPO, DAPO, BNPO, CISPO), scores completions
(`ComputeLogprobs`) and writes checkpoints. Run it with ``python -m reward_mesh_learner serve``.

Modules: `learner` (the core, no gRPC), `training` (a train step's stages), `losses` (the per-token
objectives), `sampling` (batched KV-cache sampling), `batching` (packing, completion logprobs),
`validate`, `policy` (model + tokenizer behind one interface), `model` (the built-in transformer),
`tokenizer`, `hf` (Hugging Face models), `checkpoint`, `warmup`, `contract` (request and result
types), `errors`, `wire` (protobuf conversions), `proto` (the generated stubs), `server` (grpcio).
"""

__version__ = "0.1.0"
