"""Go's writers, byte for byte: `encoding/json` for the operator's types, `sigs.k8s.io/yaml`, and
`resource.Quantity`."""
