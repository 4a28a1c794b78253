"""The component-type axis (frontend, worker/prefill/decode, planner, epp): `table` chooses a type's
defaults; each type's decisions live in its module; `common` is what every type starts from."""
