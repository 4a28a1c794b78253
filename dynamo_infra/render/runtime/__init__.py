"""What lives beside a running graph (pure): its records (DGD, DGDSA) and their status, who owns
replicas, the planner's status fields, LoRA adapters, the agent's objects and the providers' RBAC."""
