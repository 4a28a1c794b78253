// Command workerhashref prints what the operator at the parity pin hashes for a graph's workers:
// it reads a DynamoGraphDeployment (v1alpha1 or v1beta1) as JSON on stdin, converts it to v1beta1
// with the operator's own conversion (as its webhook does), and prints the Go JSON that
// ComputeDGDWorkersSpecHash hashes, then a line with that hash. The API server's CRD defaulting is
// not applied: give it graphs whose fields have no schema default.
//
// It builds inside the operator module (it imports internal/dynamo), from a git mirror of
// ai-dynamo/dynamo:
//
//	git --git-dir=MIRROR archive cdf9267d27ac12e6424a515e9169694a3a152556 deploy/operator deploy/snapshot | tar -x -C DIR
//	mkdir DIR/deploy/operator/cmd/workerhashref && cp main.go DIR/deploy/operator/cmd/workerhashref/
//	cd DIR/deploy/operator && go build -o workerhashref ./cmd/workerhashref
//	python -c 'import json,sys,yaml; print(json.dumps(yaml.safe_load(sys.stdin)))' < graph.yaml | ./workerhashref NAMESPACE
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/ai-dynamo/dynamo/deploy/operator/api/v1alpha1"
	"github.com/ai-dynamo/dynamo/deploy/operator/api/v1beta1"
	"github.com/ai-dynamo/dynamo/deploy/operator/internal/dynamo"
)

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func main() {
	data, err := io.ReadAll(os.Stdin)
	must(err)
	var head struct {
		APIVersion string `json:"apiVersion"`
	}
	must(json.Unmarshal(data, &head))
	hub := &v1beta1.DynamoGraphDeployment{}
	if head.APIVersion == "nvidia.com/v1alpha1" {
		alpha := &v1alpha1.DynamoGraphDeployment{}
		must(json.Unmarshal(data, alpha))
		must(alpha.ConvertTo(hub))
	} else {
		must(json.Unmarshal(data, hub))
	}
	if hub.Namespace == "" && len(os.Args) > 1 {
		hub.Namespace = os.Args[1]
	}
	dcds, err := dynamo.GenerateDynamoComponentsDeployments(
		hub, nil, nil, dynamo.RollingUpdateContext{NewWorkerHash: "worker-hash-placeholder"})
	must(err)
	// The record ComputeDGDWorkersSpecHash (internal/dynamo/hash.go) marshals per worker.
	type workerTemplate struct {
		Labels      map[string]string                     `json:"labels,omitempty"`
		Annotations map[string]string                     `json:"annotations,omitempty"`
		Spec        v1beta1.DynamoComponentDeploymentSpec `json:"spec"`
	}
	workers := map[string]workerTemplate{}
	for _, dcd := range dcds {
		if dcd == nil || !dynamo.IsWorkerComponent(string(dcd.Spec.ComponentType)) {
			continue
		}
		spec := dcd.Spec.DeepCopy()
		spec.Replicas, spec.MinAvailable, spec.ScalingAdapter = nil, nil, nil
		spec.RuntimeVersionOverride = ""
		workers[dynamo.GetDCDComponentName(dcd)] = workerTemplate{
			dynamo.GetDCDKubeLabels(dcd), dynamo.GetDCDKubeAnnotations(dcd), *spec}
	}
	out, err := json.Marshal(workers)
	must(err)
	sum := sha256.Sum256(out)
	hash, err := dynamo.ComputeDGDWorkersSpecHash(hub)
	must(err)
	if hash != hex.EncodeToString(sum[:])[:8] {
		must(fmt.Errorf("record differs from hash.go's: %s", hash))
	}
	fmt.Println(string(out))
	fmt.Println(hash)
}
