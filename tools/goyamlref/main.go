package main

import (
	"bytes"
	"bufio"
	"encoding/json"
	"fmt"
	"os"

	apix "sigs.k8s.io/gateway-api-inference-extension/apix/config/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// Each stdin line: {"mode": "json"|"epp", "value": ...}; prints the YAML, then a line "----".
func main() {
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var in struct {
			Mode  string          `json:"mode"`
			Value json.RawMessage `json:"value"`
		}
		if err := json.Unmarshal(sc.Bytes(), &in); err != nil {
			panic(err)
		}
		var out []byte
		var err error
		if in.Mode == "epp" {
			var cfg apix.EndpointPickerConfig
			if err = json.Unmarshal(in.Value, &cfg); err != nil {
				panic(err)
			}
			cfg.TypeMeta = metav1.TypeMeta{APIVersion: apix.SchemeGroupVersion.String(), Kind: "EndpointPickerConfig"}
			out, err = yaml.Marshal(&cfg)
		} else {
			// As the API server stores it: numbers int64 when they parse so, else float64.
			dec := json.NewDecoder(bytes.NewReader(in.Value))
			dec.UseNumber()
			var v interface{}
			if err = dec.Decode(&v); err != nil {
				panic(err)
			}
			var j []byte
			if j, err = json.Marshal(numbers(v)); err != nil {
				panic(err)
			}
			out, err = yaml.JSONToYAML(j)
		}
		if err != nil {
			panic(err)
		}
		fmt.Print(string(out))
		fmt.Println("----")
	}
}

func numbers(v interface{}) interface{} {
	switch t := v.(type) {
	case map[string]interface{}:
		for k, x := range t {
			t[k] = numbers(x)
		}
	case []interface{}:
		for i, x := range t {
			t[i] = numbers(x)
		}
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i
		}
		f, _ := t.Float64()
		return f
	}
	return v
}
