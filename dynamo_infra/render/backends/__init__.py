"""The backend axis (vllm, sglang, trtllm): `table` detects and chooses a component's engine; each
engine's adjustments to the container, the pod and its multinode launch live in its module."""
