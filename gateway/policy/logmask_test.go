package policy_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"reflect"
	"slices"
	"testing"
	"testing/fstest"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/policy"
	"github.com/mcpgate/mcpgate/policies"
)

// TestKeepInput: with KeepInput every decision carries the input it was
// evaluated on, a cached one too; without it none does.
func TestKeepInput(t *testing.T) {
	refs := catalogRefs(t)
	ctx := context.Background()
	c := caller([]string{"supacloud.ops.*"}, "member")
	args := map[string]any{"slug": "nightly", "inputs": map[string]any{"x": 1}}
	for _, keep := range []bool{false, true} {
		e, err := policy.New(ctx, policy.Options{FS: policies.FS, Edition: gateway.EditionCommunity, Tools: refs, KeepInput: keep})
		if err != nil {
			t.Fatal(err)
		}
		var inputs []any
		for range 2 { // the second is answered from the cache
			d, err := e.Decide(ctx, agent("p-1"), c, ref(refs, "script.run"), args)
			if err != nil {
				t.Fatal(err)
			}
			inputs = append(inputs, d.Input)
		}
		if !keep {
			if inputs[0] != nil || inputs[1] != nil {
				t.Errorf("KeepInput off: inputs %v, want none", inputs)
			}
			continue
		}
		in, ok := inputs[0].(map[string]any)
		if !ok {
			t.Fatalf("input %T, want an object", inputs[0])
		}
		if !reflect.DeepEqual(inputs[0], inputs[1]) {
			t.Errorf("cached decision's input %v differs from %v", inputs[1], inputs[0])
		}
		tool := in["tool"].(map[string]any)
		if tool["name"] != "script.run" || in["principal"].(map[string]any)["sub"] != "olivia" || in["edition"] != "community" {
			t.Errorf("input %v", in)
		}
		if got := in["arguments"]; !reflect.DeepEqual(got, map[string]any{"slug": "nightly"}) {
			t.Errorf("input arguments %v, want only what the bundle reads (slug)", got)
		}
	}
}

// TestMaskOfTheEmbeddedBundle evaluates the shipped data.system.log.mask
// on an event: the slug is not opted in, and the JWT in the principal is
// masked.
func TestMaskOfTheEmbeddedBundle(t *testing.T) {
	e, _ := newEngine(t, gateway.EditionCommunity)
	if !e.HasMask() {
		t.Fatal("the embedded bundle has no data.system.log.mask")
	}
	var ev map[string]any
	_ = json.Unmarshal([]byte(`{"decision_id":"d","input":{"tool":{"name":"script.run"},"principal":{"sub":"eyJhbGciOiJIUzI1NiJ9.eyJ4IjoxfQ.c2ln"},"arguments":{"slug":"s","n":12345678901234567890}},"result":{"allow":true}}`), &ev)
	got, err := e.Mask(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, r := range got.([]any) {
		switch r := r.(type) {
		case string:
			paths = append(paths, r)
		case map[string]any:
			paths = append(paths, r["op"].(string)+" "+r["path"].(string))
		}
	}
	slices.Sort(paths)
	want := []string{"/input/arguments/n", "/input/arguments/slug", "upsert /input/principal/sub"}
	if !slices.Equal(paths, want) {
		t.Errorf("mask %v, want %v", paths, want)
	}
	// The mask reads the event, not the policy input: the decision reads
	// the same arguments as the bundle without its system/log folder.
	bare, err := policy.New(context.Background(), policy.Options{FS: withoutDir{policies.FS, "system"}, Edition: gateway.EditionCommunity, Tools: catalogRefs(t)})
	if err != nil {
		t.Fatal(err)
	}
	all, keys := e.ArgumentKeys()
	bareAll, bareKeys := bare.ArgumentKeys()
	if bare.HasMask() {
		t.Fatal("the bundle without system/ still has a mask")
	}
	keys, bareKeys = slices.Sorted(slices.Values(keys)), slices.Sorted(slices.Values(bareKeys))
	if all != bareAll || !slices.Equal(keys, bareKeys) {
		t.Errorf("argument keys all=%v %v, without the mask all=%v %v: the mask module changed what the decision reads", all, keys, bareAll, bareKeys)
	}
}

// withoutDir is fsys without the top-level folder dir.
type withoutDir struct {
	fs.FS
	dir string
}

func (w withoutDir) ReadDir(name string) ([]fs.DirEntry, error) {
	entries, err := fs.ReadDir(w.FS, name)
	if name != "." {
		return entries, err
	}
	return slices.DeleteFunc(entries, func(e fs.DirEntry) bool { return e.Name() == w.dir }), err
}

func TestMaskMissingOrFailing(t *testing.T) {
	withMask := func(rule string) fstest.MapFS {
		fs := fstest.MapFS{
			"supacloud/d.rego": {Data: []byte("package supacloud\ndecision := {\"allow\": false, \"visible\": false}\nvisible_tools := []\n")},
		}
		if rule != "" {
			fs["system/log/m.rego"] = &fstest.MapFile{Data: []byte("package system.log\n" + rule)}
		}
		return fs
	}
	ctx := context.Background()
	e, err := policy.New(ctx, policy.Options{FS: withMask(""), Edition: gateway.EditionCommunity})
	if err != nil {
		t.Fatal(err)
	}
	if e.HasMask() {
		t.Error("HasMask without a mask rule")
	}
	if _, err := e.Mask(ctx, map[string]any{}); err == nil {
		t.Error("Mask without a mask rule succeeded; the event would be logged unmasked")
	}
	e, err = policy.New(ctx, policy.Options{FS: withMask("mask := x if { x := input.input.n / 0 }\n"), Edition: gateway.EditionCommunity})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Mask(ctx, map[string]any{"input": map[string]any{"n": json.Number("1")}}); err == nil {
		t.Error("a mask that fails (division by zero, strict builtin errors) returned no error")
	}
}
