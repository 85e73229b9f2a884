package ccdemo

import (
	"maps"
	"slices"
	"strconv"
)

func itoa(i int) string { return strconv.Itoa(i) }

func nonNil(l []any) []any {
	if l == nil {
		return []any{}
	}
	return l
}

func strs(v any) []string {
	var out []string
	for _, x := range asList(v) {
		out = append(out, str(x))
	}
	return out
}

func asList(v any) []any { l, _ := v.([]any); return l }

// pick answers some fields of an entity (or the lookup's error).
func pick(e entity, err error, fields ...string) (any, error) {
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	for _, f := range fields {
		out[f] = e[f]
	}
	return out, nil
}

// skillBy changes the skill the slug argument names.
func skillBy(change func(r *request, e entity)) handler {
	return func(r *request) (any, error) {
		e := r.ws.findBy("skill", "slug", r.str("slug"))
		if e == nil {
			return nil, fail("no skill %q in workspace %s; list_skills lists the installed ones", r.str("slug"), r.ws.id)
		}
		change(r, e)
		return e, nil
	}
}

func skillsWhere(r *request, keep func(entity) bool) map[string]any {
	out := []entity{}
	for _, e := range r.ws.kinds["skill"] {
		if keep(e) {
			out = append(out, entity{"slug": e["slug"], "ref": e["ref"], "update_available": e["update_available"], "hash_ok": true})
		}
	}
	return map[string]any{"workspace_id": r.ws.id, "skills": out}
}

func memoryDomains(r *request) (any, error) {
	counts := map[string]map[string]int{}
	for _, kind := range []string{"fact", "policy"} {
		for _, e := range r.ws.kinds[kind] {
			d := str(e["domain"])
			if counts[d] == nil {
				counts[d] = map[string]int{}
			}
			counts[d][kind]++
		}
	}
	out := []map[string]any{}
	for _, d := range slices.Sorted(maps.Keys(counts)) {
		out = append(out, map[string]any{"domain": d, "facts": counts[d]["fact"], "policies": counts[d]["policy"]})
	}
	return map[string]any{"workspace_id": r.ws.id, "domains": out}, nil
}

// projection answers some fields of every agent.
func projection(fields ...string) handler {
	return func(r *request) (any, error) {
		out := []map[string]any{}
		for _, a := range r.ws.kinds["agent"] {
			row := map[string]any{"agent_id": a["id"], "name": a["name"]}
			for _, f := range fields {
				row[f] = a[f]
			}
			out = append(out, row)
		}
		return map[string]any{"workspace_id": r.ws.id, "agents": out}, nil
	}
}

func orgChart(r *request) (any, error) {
	var build func(boss any) []map[string]any
	build = func(boss any) []map[string]any {
		out := []map[string]any{}
		for _, a := range r.ws.kinds["agent"] {
			if a["reports_to"] == boss {
				out = append(out, map[string]any{"agent_id": a["id"], "name": a["name"], "role": a["role"], "reports": build(a["id"])})
			}
		}
		return out
	}
	return map[string]any{"workspace_id": r.ws.id, "root": build(nil)}, nil
}

func assign(r *request, e entity) error {
	if r.str("agent_id") == "" && r.str("team") == "" {
		return fail("assign_ticket needs agent_id, team or both")
	}
	if r.str("agent_id") != "" {
		a, err := r.one("agent", "agent_id")
		if err != nil {
			return err
		}
		e["assignee"] = a["name"]
	}
	if t := r.str("team"); t != "" {
		e["team"] = t
	}
	return nil
}

func cohort(field string) func(*request, entity) error {
	return func(r *request, e entity) error {
		c := e["cohorts"].(map[string]any)
		m, _ := c[r.str("cohort")].(map[string]any)
		if m == nil {
			m = map[string]any{}
		}
		if field == "diagram" {
			m["diagram"] = map[string]any{"kind": r.args["kind"], "graph": r.args["diagram"]}
		} else {
			m["summary"] = r.args["summary"]
		}
		c[r.str("cohort")] = m
		return nil
	}
}

func saveRevision(r *request, e entity) error {
	revs := e["revisions"].([]any)
	latest := revs[len(revs)-1].(map[string]any)["id"]
	if r.str("base_revision_id") != latest {
		return fail("work product %s has changed since revision %s (latest is %v); get_work_product, merge, and save again on the latest revision", e["id"], r.str("base_revision_id"), latest)
	}
	e["revisions"] = append(revs, map[string]any{"id": "R-" + itoa(len(revs)+1), "content": r.args["content"], "at": r.now.Format("2006-01-02T15:04:05Z")})
	return nil
}
