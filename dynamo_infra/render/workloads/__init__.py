"""The workload/orchestrator axis: what runs a component's pods. `table` chooses a DCD's workload
(Deployment or LeaderWorkerSet); `grove` renders a whole graph as one PodCliqueSet; `dcd` is the
DynamoComponentDeployment the graph controller writes first."""
