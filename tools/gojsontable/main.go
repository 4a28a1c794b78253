// Command gojsontable prints, as JSON, how Go's encoding/json writes a DynamoComponentDeploymentSpec:
// every struct type reachable from it with its JSON fields in encoding order (embedded structs
// flattened), their omitempty/omitzero options and their types, and the types that marshal
// themselves. dynamo_infra/render/gojson.py reads it to serialise a DCD spec as the operator does
// when it computes the worker hash. Run through tools/gojson_table.py (it supplies the operator's
// API source from a git mirror at the parity pin).
package main

import (
	"bytes"
	"encoding"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"reflect"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/ai-dynamo/dynamo/deploy/operator/api/v1beta1"
)

type field struct {
	Name      string `json:"name"`
	Type      string `json:"type"`
	OmitEmpty bool   `json:"omitempty,omitempty"`
	OmitZero  bool   `json:"omitzero,omitempty"`
	// Set when the type's IsZero method decides omitzero.
	ZeroMethod bool `json:"zeroMethod,omitempty"`
}

type table struct {
	Generator  string             `json:"generator"`
	Sources    map[string]string  `json:"sources"`
	Root       string             `json:"root"`
	Marshalers []string           `json:"marshalers"`
	Structs    map[string][]field `json:"structs"`
}

// Modules whose versions the table records.
var sourceModules = []string{"k8s.io/api", "k8s.io/apimachinery", "sigs.k8s.io/gateway-api-inference-extension"}

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	isZeroerType      = reflect.TypeFor[interface{ IsZero() bool }]()
)

type generator struct {
	out     table
	pending []reflect.Type
	names   map[string]reflect.Type
}

// typeName is a type's table name: `<last two import path elements>.<Name>`.
func (g *generator) typeName(t reflect.Type) string {
	parts := strings.Split(t.PkgPath(), "/")
	if len(parts) > 2 {
		parts = parts[len(parts)-2:]
	}
	name := strings.Join(parts, "/") + "." + t.Name()
	if other, ok := g.names[name]; ok && other != t {
		panic(fmt.Sprintf("%s names both %s and %s", name, other.PkgPath(), t.PkgPath()))
	}
	g.names[name] = t
	return name
}

func implements(t, iface reflect.Type) bool {
	return t.Implements(iface) || reflect.PointerTo(t).Implements(iface)
}

// expr is the table's type expression of t.
func (g *generator) expr(t reflect.Type) string {
	if t.Name() != "" && (implements(t, marshalerType) || implements(t, textMarshalerType)) {
		name := g.typeName(t)
		if !contains(g.out.Marshalers, name) {
			g.out.Marshalers = append(g.out.Marshalers, name)
		}
		return name
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "bool"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "int"
	case reflect.Float32:
		return "float32"
	case reflect.Float64:
		return "float64"
	case reflect.Pointer:
		return "*" + g.expr(t.Elem())
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "bytes"
		}
		return "[]" + g.expr(t.Elem())
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			panic(fmt.Sprintf("map key %s is not a string", t))
		}
		return "map[string]" + g.expr(t.Elem())
	case reflect.Struct:
		name := g.typeName(t)
		if _, seen := g.out.Structs[name]; !seen {
			g.out.Structs[name] = nil
			g.pending = append(g.pending, t)
		}
		return name
	default:
		panic(fmt.Sprintf("unsupported kind %s (%s)", t.Kind(), t))
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

// fields lists t's JSON fields in encoding/json's order: declaration order, an untagged embedded
// struct's fields in its place. A name seen twice is an error here (no dominance rules needed).
func (g *generator) fields(t reflect.Type, seen map[string]bool) []field {
	out := []field{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			if ft.Kind() == reflect.Pointer {
				panic(fmt.Sprintf("%s.%s: embedded pointer", t, f.Name))
			}
			if ft.Kind() == reflect.Struct && !implements(ft, marshalerType) {
				out = append(out, g.fields(ft, seen)...)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if seen[name] {
			panic(fmt.Sprintf("%s: JSON field %q appears twice", t, name))
		}
		seen[name] = true
		fl := field{Name: name, Type: g.expr(ft)}
		for _, o := range strings.Split(opts, ",") {
			switch o {
			case "omitempty":
				fl.OmitEmpty = true
			case "omitzero":
				fl.OmitZero = true
				fl.ZeroMethod = implements(ft, isZeroerType)
			case "", "inline":
			default:
				panic(fmt.Sprintf("%s.%s: unsupported JSON option %q", t, f.Name, o))
			}
		}
		out = append(out, fl)
	}
	return out
}

// write prints the table with one struct field a line.
func write(t table) {
	var b bytes.Buffer
	head, _ := json.Marshal(struct {
		Generator  string            `json:"generator"`
		Sources    map[string]string `json:"sources"`
		Root       string            `json:"root"`
		Marshalers []string          `json:"marshalers"`
	}{t.Generator, t.Sources, t.Root, t.Marshalers})
	b.Write(head[:len(head)-1])
	b.WriteString(",\n\"structs\": {")
	names := make([]string, 0, len(t.Structs))
	for name := range t.Structs {
		names = append(names, name)
	}
	sort.Strings(names)
	for i, name := range names {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "\n %q: [", name)
		for j, f := range t.Structs[name] {
			if j > 0 {
				b.WriteString(",")
			}
			line, _ := json.Marshal(f)
			b.WriteString("\n  ")
			b.Write(line)
		}
		b.WriteString("]")
	}
	b.WriteString("\n}}\n")
	os.Stdout.Write(b.Bytes())
}

func main() {
	commit := flag.String("operator-commit", "", "ai-dynamo/dynamo commit of the operator API source")
	command := flag.String("generator", "", "the command that regenerates the table")
	flag.Parse()
	sources := map[string]string{"github.com/ai-dynamo/dynamo/deploy/operator": *commit}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if contains(sourceModules, dep.Path) {
				sources[dep.Path] = dep.Version
			}
		}
	}
	root := reflect.TypeFor[v1beta1.DynamoComponentDeploymentSpec]()
	g := &generator{out: table{Generator: *command, Sources: sources, Structs: map[string][]field{}}, names: map[string]reflect.Type{}}
	g.out.Root = g.expr(root)
	for len(g.pending) > 0 {
		t := g.pending[0]
		g.pending = g.pending[1:]
		g.out.Structs[g.typeName(t)] = g.fields(t, map[string]bool{})
	}
	sort.Strings(g.out.Marshalers)
	write(g.out)
}
