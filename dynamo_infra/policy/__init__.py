"""The decisions of the pull-request policy pack (`policy/`), pure and testable without Pulumi:
pods of rendered manifests (`pods`), GPU fit (`gpus`), pinned images (`images`), literal secrets
in env vars (`secrets`); `cluster` reads a cluster's GPUs (the only module with I/O)."""
