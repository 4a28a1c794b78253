"""The run-time agent: what changes while a graph runs (replicas asked for at run time, records'
status, LoRA adapters), watched with kopf. Nothing but its command line imports it."""
