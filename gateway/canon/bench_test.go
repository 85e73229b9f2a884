package canon

import "testing"

// benchArgs are the arguments of a typical tools/call: the transport
// benchmark's, and a larger one with nesting, escapes and an inexact
// number.
var benchArgs = map[string][]byte{
	"small": []byte(`{"project_id":"p-123","include":["env","budget"],"limit":10}`),
	"large": []byte(`{"app_id":"app-1","env":"prod","replicas":3,"note":"line\nbreak \u00e9","tags":["a","b","c","d"],` +
		`"opts":{"force":false,"timeout_ms":30000,"ratio":0.25,"labels":{"team":"core","tier":"gold"}},"budget":9007199254740993,` +
		`"steps":[{"name":"build","args":["-v"]},{"name":"test","args":[]},{"name":"ship","args":["--canary","10"]}]}`),
}

// BenchmarkDecode measures canon.Decode of tool arguments.
func BenchmarkDecode(b *testing.B) {
	for name, raw := range benchArgs {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Decode(raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkHash measures canon.Hash of decoded tool arguments (the audit
// row's arguments_hash).
func BenchmarkHash(b *testing.B) {
	for name, raw := range benchArgs {
		v, err := Decode(raw)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Hash(v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
