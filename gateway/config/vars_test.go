package config

import (
	"reflect"
	"slices"
	"testing"
)

// readNames is every variable Load reads, in the order it reads them.
func readNames() []string {
	var names []string
	_, _ = Load(func(name string) string {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
		return ""
	})
	return names
}

// Issue 30, point 5: Vars is the one configuration table: it names every
// variable Load reads and no other, each once, with a meaning.
func TestVarsNameWhatLoadReads(t *testing.T) {
	read := readNames()
	var table []string
	for _, v := range Vars {
		if slices.Contains(table, v.Name) {
			t.Errorf("Vars lists %s twice", v.Name)
		}
		table = append(table, v.Name)
		if v.Meaning == "" {
			t.Errorf("Vars: %s has no meaning", v.Name)
		}
		if !slices.Contains(read, v.Name) {
			t.Errorf("Vars lists %s, which Load does not read", v.Name)
		}
	}
	for _, n := range read {
		if !slices.Contains(table, n) {
			t.Errorf("Load reads %s, which Vars does not list (serve --help would not explain it)", n)
		}
	}
}

// Each default the table states is Load's: setting a variable to its
// stated default gives the configuration of leaving it unset.
func TestVarsDefaultsAreLoads(t *testing.T) {
	base := map[string]string{"MCPGATE_JWT_SECRET": secret}
	want, err := Load(env(base))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range Vars {
		if v.Default == "" {
			continue
		}
		t.Run(v.Name, func(t *testing.T) {
			e := map[string]string{v.Name: v.Default}
			for k, x := range base {
				if k != v.Name {
					e[k] = x
				}
			}
			got, err := Load(env(e))
			if err != nil {
				t.Fatalf("%s=%s (its stated default): %v", v.Name, v.Default, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s=%s (its stated default) gives another configuration than leaving it unset:\n got %+v\nwant %+v", v.Name, v.Default, got, want)
			}
		})
	}
}
