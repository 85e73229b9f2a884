// Package search ranks a tool catalog for a keyword query with Okapi BM25
// (docs/requirements.md#cc-tool-search: search_tool_bm25 searches the tool catalog by keyword).
// A tool's document is its name, its description and the names and
// descriptions of the properties of its input schema, each field weighted
// (a name word counts NameWeight times, a property name PropertyWeight
// times). Ranking is deterministic: by score, then by name.
//
// The scorer is our own, about a hundred lines: the one Go full-text
// library on hand (bleve) brings an index format, analysers and a large
// dependency tree for a corpus of a hundred short documents, and its
// scores are not stable across its versions, which the tests pin.
package search

import (
	"encoding/json"
	"math"
	"sort"
	"strings"
	"unicode"

	"github.com/mcpgate/mcpgate/tools"
)

// BM25 parameters (the usual defaults) and the field weights.
const (
	K1             = 1.2
	B              = 0.75
	NameWeight     = 3
	PropertyWeight = 2
)

// Index is an immutable BM25 index over a catalog; safe for concurrent use.
type Index struct {
	docs  []doc
	df    map[string]int // documents containing the term
	avgdl float64
}

type doc struct {
	name string
	tf   map[string]float64
	len  float64
}

// Hit is one ranked tool: its name and BM25 score (> 0).
type Hit struct {
	Name  string  `json:"name"`
	Score float64 `json:"score"`
}

// New indexes the tools (in any order; the ranking does not depend on it).
func New(ts []tools.Tool) *Index {
	ix := &Index{df: map[string]int{}}
	var total float64
	for _, t := range ts {
		d := doc{name: t.Name, tf: map[string]float64{}}
		add := func(text string, w float64) {
			for _, term := range Terms(text) {
				d.tf[term] += w
				d.len += w
			}
		}
		add(t.Name, NameWeight)
		add(t.Description, 1)
		schemaText(t.InputSchema, 0, func(prop, desc string) {
			add(prop, PropertyWeight)
			add(desc, 1)
		})
		for term := range d.tf {
			ix.df[term]++
		}
		total += d.len
		ix.docs = append(ix.docs, d)
	}
	if len(ix.docs) > 0 {
		ix.avgdl = total / float64(len(ix.docs))
	}
	return ix
}

// schemaText calls f for every property of an object schema, nested
// objects and array items included (to depth 4).
func schemaText(raw json.RawMessage, depth int, f func(prop, desc string)) {
	if depth > 4 || len(raw) == 0 {
		return
	}
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Items      json.RawMessage            `json:"items"`
	}
	if json.Unmarshal(raw, &s) != nil {
		return
	}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		var p struct {
			Description string `json:"description"`
		}
		_ = json.Unmarshal(s.Properties[n], &p)
		f(n, p.Description)
		schemaText(s.Properties[n], depth+1, f)
	}
	schemaText(s.Items, depth+1, f)
}

// Search returns the tools matching query, best first, at most limit of
// them (all when limit <= 0). Ties are broken by name. A query without
// words, or whose words no tool contains, returns no hits.
func (ix *Index) Search(query string, limit int) []Hit {
	q := Terms(query)
	n := float64(len(ix.docs))
	var hits []Hit
	for _, d := range ix.docs {
		var score float64
		for _, term := range q {
			tf := d.tf[term]
			if tf == 0 {
				continue
			}
			df := float64(ix.df[term])
			idf := math.Log(1 + (n-df+0.5)/(df+0.5))
			score += idf * tf * (K1 + 1) / (tf + K1*(1-B+B*d.len/ix.avgdl))
		}
		if score > 0 {
			hits = append(hits, Hit{Name: d.name, Score: score})
		}
	}
	sort.Slice(hits, func(i, j int) bool {
		if hits[i].Score != hits[j].Score {
			return hits[i].Score > hits[j].Score
		}
		return hits[i].Name < hits[j].Name
	})
	if limit > 0 && len(hits) > limit {
		hits = hits[:limit]
	}
	return hits
}

// Terms splits text into search terms: lower-case runs of letters and
// digits ("close_ticket" is "close" and "ticket"), a plural "s" folded
// ("tickets" is "ticket"), words of one letter dropped.
func Terms(text string) []string {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	out := words[:0]
	for _, w := range words {
		if len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") {
			w = w[:len(w)-1]
		}
		if len(w) > 1 {
			out = append(out, w)
		}
	}
	return out
}
