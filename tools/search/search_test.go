package search

import (
	"encoding/json"
	"math"
	"slices"
	"testing"

	"github.com/mcpgate/mcpgate/tools"
)

func ccIndex(t *testing.T) *Index {
	t.Helper()
	c, err := tools.LoadCCServer()
	if err != nil {
		t.Fatal(err)
	}
	return New(c.Tools())
}

func names(hits []Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Name
	}
	return out
}

// TestKnownRankings pins the top hits of queries a client would send.
func TestKnownRankings(t *testing.T) {
	ix := ccIndex(t)
	cases := []struct {
		query string
		top   []string // the first hits, in order
	}{
		{"close ticket", []string{"close_ticket"}},
		{"screenshot chromium", []string{"browser_use"}},
		{"android adb", []string{"mobile_use"}},
		{"RSS feeds", []string{"list_feeds", "refresh_feeds"}},
		{"symbol callers", []string{"code_callers"}},
		{"workspaces", []string{"list_workspaces"}},
		{"pull request node id", []string{"ticket_pr_link"}},
		{"base_revision_id", []string{"save_work_product_revision"}},
	}
	for _, tc := range cases {
		got := names(ix.Search(tc.query, len(tc.top)))
		if !slices.Equal(got, tc.top) {
			t.Errorf("Search(%q) = %v, want %v first", tc.query, got, tc.top)
		}
	}
}

func TestNoHits(t *testing.T) {
	ix := ccIndex(t)
	for _, q := range []string{"", "   ", "!!", "zyzzyva", "x"} {
		if hits := ix.Search(q, 10); len(hits) != 0 {
			t.Errorf("Search(%q) = %v, want none", q, hits)
		}
	}
	if hits := New(nil).Search("ticket", 5); len(hits) != 0 {
		t.Errorf("empty index: %v", hits)
	}
}

func TestLimitAndDeterminism(t *testing.T) {
	ix := ccIndex(t)
	all := ix.Search("ticket", 0)
	if len(all) < 14 {
		t.Fatalf("ticket matches %d tools, want every ticket tool at least", len(all))
	}
	if got := ix.Search("ticket", 3); !slices.Equal(got, all[:3]) {
		t.Errorf("limit 3 = %v, want the first three of %v", got, all[:3])
	}
	c, _ := tools.LoadCCServer()
	rev := c.Tools()
	slices.Reverse(rev)
	if again := New(rev).Search("ticket", 0); !slices.Equal(again, all) {
		t.Error("the ranking depends on the order the tools were indexed in")
	}
	for i := 1; i < len(all); i++ {
		a, b := all[i-1], all[i]
		if a.Score < b.Score || (a.Score == b.Score && a.Name > b.Name) {
			t.Errorf("hits %d and %d out of order: %v %v", i-1, i, a, b)
		}
	}
}

func mini(name, desc string) tools.Tool {
	return tools.Tool{Name: name, Description: desc, InputSchema: json.RawMessage(`{"type":"object"}`)}
}

// TestScoreByHand checks the formula on a three-document corpus.
func TestScoreByHand(t *testing.T) {
	ix := New([]tools.Tool{mini("aa", "apple banana"), mini("bb", "banana"), mini("cc", "cherry")})
	// Lengths: aa = 3 (name) + 2, bb = 3 + 1, cc = 3 + 1; avgdl = 13/3.
	// "apple" occurs in one document: idf = ln(1 + (3-1+0.5)/(1+0.5)).
	idf := math.Log(1 + 2.5/1.5)
	want := idf * 1 * (K1 + 1) / (1 + K1*(1-B+B*5/(13.0/3)))
	hits := ix.Search("apple", 0)
	if len(hits) != 1 || hits[0].Name != "aa" || math.Abs(hits[0].Score-want) > 1e-12 {
		t.Fatalf("Search(apple) = %v, want aa with %v", hits, want)
	}
	// A rarer term outranks a common one; the shorter document wins a tie in tf.
	if got := names(ix.Search("banana", 0)); !slices.Equal(got, []string{"bb", "aa"}) {
		t.Errorf("Search(banana) = %v, want [bb aa] (bb is shorter)", got)
	}
	// A name word counts NameWeight times.
	if got := names(ix.Search("cherry cc", 0)); !slices.Equal(got, []string{"cc"}) {
		t.Errorf("Search(cherry cc) = %v", got)
	}
}

func TestTerms(t *testing.T) {
	got := Terms("close_ticket: Tickets, a PR's STATUS (in_progress) x2")
	want := []string{"close", "ticket", "ticket", "pr", "statu", "in", "progress", "x2"}
	if !slices.Equal(got, want) {
		t.Errorf("Terms = %v, want %v", got, want)
	}
}
