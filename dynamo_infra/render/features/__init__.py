"""Features a graph or component opts into, each in its module: checkpoints (and the 1.5+ snapshot
API), GPU memory service, DRA, ingress, autoscaling, KV transfer, pull secrets, failover, restarts,
discovery RBAC, declared PVCs."""
