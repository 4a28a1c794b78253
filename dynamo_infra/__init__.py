"""dynamo-infra: NVIDIA Dynamo inference graphs on Kubernetes, rendered and reconciled by Pulumi."""
