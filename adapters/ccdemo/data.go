package ccdemo

import (
	"fmt"
	"time"
)

// prefixes are the id prefixes per kind of entity. The kinds match the
// resource kinds of the cc_server catalog (ticket, artifact, space, …).
var prefixes = map[string]string{
	"agent": "AGT", "skill": "SKL", "artifact": "ART", "playbook": "PBK", "plan": "PLN",
	"repo": "REP", "space": "SPC", "review": "REV", "fact": "FCT", "policy": "POL",
	"observation": "OBS", "hot": "HOT", "conflict": "CNF", "goal": "GOL", "approval": "APR",
	"work_product": "WP", "runtime_profile": "RTP", "symbol": "SYM", "ticket": "TCK",
	"rig": "RIG", "run": "RUN",
}

// seed fills a new workspace with records that look like a small team's.
func seed(w *workspace, now time.Time) {
	at := func(d time.Duration) string { return now.Add(-d).Format(time.RFC3339) }
	ceo := w.add("agent", entity{"name": "ada", "role": "CEO", "reports_to": nil, "skills": []any{"planning"}, "health": "alive", "lifecycle": "running", "running_runs": 1, "waiting_runs": 0, "capacity": 3})
	lin := w.add("agent", entity{"name": "lin", "role": "backend engineer", "reports_to": ceo["id"], "skills": []any{"go", "sql-review"}, "health": "alive", "lifecycle": "idle", "running_runs": 0, "waiting_runs": 1, "capacity": 2})
	w.add("agent", entity{"name": "sam", "role": "reviewer", "reports_to": ceo["id"], "skills": []any{"code-review", "security"}, "health": "recently-lost", "lifecycle": "running", "running_runs": 1, "waiting_runs": 0, "capacity": 2})
	w.add("agent", entity{"name": "rio", "role": "frontend engineer", "reports_to": lin["id"], "skills": []any{"typescript", "release-notes"}, "health": "offline", "lifecycle": "stopped", "running_runs": 0, "waiting_runs": 0, "capacity": 1})

	w.add("skill", entity{"slug": "release-notes", "source": "github:acme/skills/release-notes", "ref": "v1.4.0", "pinned": true, "update_available": "v1.5.0"})
	w.add("skill", entity{"slug": "sql-review", "source": "local", "ref": nil, "pinned": true, "update_available": nil})

	w.add("artifact", entity{"title": "p95 latency, last 7 days", "blocks": []any{map[string]any{"type": "markdown", "content": "Checkout p95 fell from 420 ms to 310 ms after the cache change."}}, "revision": 1, "updated_at": at(3 * time.Hour)})
	w.add("playbook", entity{"name": "weekly dependency bump", "version": 3, "template": "Bump {{module}} to {{version}}, run the tests, open a PR.", "params": []any{map[string]any{"name": "module", "type": "string"}, map[string]any{"name": "version", "type": "string"}}})

	for _, name := range []string{"web", "api"} {
		w.add("repo", entity{"name": name, "default_branch": "main", "worktree_path": fmt.Sprintf("/var/cc/worktrees/%s/%s", w.tag, name)})
	}

	w.add("space", entity{"name": "general", "members": []any{"ada", "lin", "sam"}, "notes": "Release train: Thursdays 15:00 UTC.", "messages": []any{
		map[string]any{"from": "ada", "text": "Please keep tickets in the sprint column current.", "at": at(26 * time.Hour)},
		map[string]any{"from": "lin", "text": "Checkout cache is merged; watching p95.", "at": at(4 * time.Hour)},
	}})
	w.add("space", entity{"name": "pr-412-review", "members": []any{"lin", "sam"}, "notes": "", "messages": []any{}})

	t1 := w.add("ticket", entity{"title": "Checkout p95 over 400 ms", "status": "in_progress", "priority": "high", "assignee": "lin", "labels": []any{"perf"}, "comments": []any{}, "relations": []any{}, "collaborators": []any{}, "pr_links": []any{}, "events": []any{}})
	w.add("ticket", entity{"title": "Release notes for 2.8", "status": "todo", "priority": "medium", "assignee": "rio", "labels": []any{"docs"}, "comments": []any{}, "relations": []any{}, "collaborators": []any{}, "pr_links": []any{}, "events": []any{}})
	w.add("ticket", entity{"title": "Rotate the staging database password", "status": "completed", "priority": "urgent", "assignee": "lin", "labels": []any{"ops"}, "comments": []any{}, "relations": []any{}, "collaborators": []any{}, "pr_links": []any{}, "events": []any{}})

	w.add("review", entity{"repo": "acme/web", "pr_number": 412, "status": "open", "nodes": []any{
		map[string]any{"id": "N-1", "file": "src/cache.ts", "line": 88, "priority": "P1", "body": "TTL is not refreshed on write.", "author": "sam", "status": "open"},
	}, "verdicts": []any{}, "cohorts": map[string]any{}, "events": []any{}})

	w.add("fact", entity{"domain": "billing", "content": "Invoices are cut on the 1st, 00:00 UTC.", "status": "active"})
	w.add("fact", entity{"domain": "deploy", "content": "Staging deploys are frozen on release Thursdays.", "status": "active"})
	w.add("policy", entity{"domain": "deploy", "rule": "Every production deploy needs a green canary for 30 minutes.", "status": "active"})
	w.add("conflict", entity{"domain": "deploy", "between": []any{"lin", "sam"}, "summary": "Whether hotfixes may skip the canary.", "resolution": "policy wins: no skip"})

	g := w.add("goal", entity{"title": "Checkout p95 under 300 ms", "level": "team", "status": "active", "progress": 0.6, "parent_goal_id": nil})
	w.add("goal", entity{"title": "Ship 2.8", "level": "company", "status": "active", "progress": 0.3, "parent_goal_id": nil})
	_ = g
	w.add("approval", entity{"kind": "release", "title": "Release 2.8 to production", "status": "pending", "comments": []any{}, "decisions": []any{}})
	w.add("work_product", entity{"ticket_id": t1["id"], "title": "Cache design note", "revisions": []any{map[string]any{"id": "R-1", "content": "Write-through cache with 60 s TTL.", "at": at(5 * time.Hour)}}})
	w.add("runtime_profile", entity{"name": "claude-code", "protocol": "acp", "command": "claude", "args": []any{"--acp"}})

	for _, s := range []struct{ name, file, sig, doc string }{
		{"CheckoutHandler", "api/checkout.go:41", "func CheckoutHandler(w http.ResponseWriter, r *http.Request)", "Serves POST /checkout."},
		{"PriceCart", "api/pricing.go:17", "func PriceCart(ctx context.Context, c Cart) (Money, error)", "Prices a cart with the active promotions."},
		{"CacheGet", "api/cache.go:22", "func CacheGet(key string) ([]byte, bool)", "Reads the write-through cache."},
		{"LoadPromotions", "api/promo.go:9", "func LoadPromotions(ctx context.Context) ([]Promotion, error)", "Loads promotions from the database."},
	} {
		w.add("symbol", entity{"name": s.name, "location": s.file, "signature": s.sig, "doc": s.doc, "repo": "api"})
	}
	w.kinds["symbol"][0]["callees"] = []any{"PriceCart", "CacheGet"}
	w.kinds["symbol"][1]["callees"] = []any{"LoadPromotions", "CacheGet"}

	w.add("rig", entity{"surface": "browser", "status": "running", "display": "1280x800", "controller": "lin"})
	w.add("run", entity{"pipeline": "meeting-free triage", "status": "running", "output_schema": "triage.v1"})
}

// feedState is one user's newsfeed.
type feedState struct {
	feeds    []entity
	articles []entity
}

// feedsOf returns actor's newsfeed, seeding it on first use. The caller holds b.mu.
func (b *Backend) feedsOf(actor string) *feedState {
	if f, ok := b.feeds[actor]; ok {
		return f
	}
	h := tag("feed:" + actor)
	f := &feedState{
		feeds: []entity{
			{"id": "FEED-" + h + "-1", "title": "Go Blog", "url": "https://go.dev/blog/feed.atom", "enabled": true},
			{"id": "FEED-" + h + "-2", "title": "OPA releases", "url": "https://github.com/open-policy-agent/opa/releases.atom", "enabled": true},
		},
	}
	for i, t := range []string{"Range over function types", "Go 1.26 is released", "OPA v1.9: faster partial evaluation"} {
		feed := f.feeds[0]["id"]
		if i == 2 {
			feed = f.feeds[1]["id"]
		}
		f.articles = append(f.articles, entity{"id": fmt.Sprintf("NEWS-%s-%d", h, i+1), "feed_id": feed, "title": t, "read": i == 0, "saved": false})
	}
	b.feeds[actor] = f
	return f
}
