"""The run-time agent (`dynamo-infra agent`): carries replica requests from DGDSAs and DGD records to
the workloads, keeps the records' status live, and loads LoRA adapters. Only its CLI imports it."""
