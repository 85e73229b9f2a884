package demo

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// The documentation and contract reads serve an instance-wide corpus, not
// tenant data (docs/requirements.md#read-caps): every workspace
// sees the same pages.

// maxDocBody caps docs.get bodies and rendered spec.get nodes (64 KiB).
const maxDocBody = 64 << 10

type docPage struct {
	path, lang, raw string
}

// docsCorpus holds English pages under their corpus path and German ones
// under de/<path>. Frontmatter is stripped when served.
var docsCorpus = []docPage{
	{"user/how-to/approve-agent-actions.mdx", "en", "---\ntitle: Approve agent actions\n---\n# Approve agent actions\n\nAgents pause at decision gates when they need a person. Open **Approvals** to see every waiting gate.\n\n- **Question** gates ask for an answer; coordinators may answer them through approval.decide.\n- **Tool**, **visual** and **tier change** gates need a person. A machine can never decide them.\n- **Workflow human gates** stop a workflow run until a member approves or rejects the step.\n"},
	{"user/concepts/permissions-and-tiers.mdx", "en", "---\ntitle: Permissions and MCP tool tiers\n---\n# Permissions and MCP tool tiers\n\nTwo gates decide what an agent can do: the deployment edition and the agent profile's MCP allowlist. Tools belong to five tiers: baseline, read, ops, scaffold and deploy. supacloud.full grants all tiers; script.run needs supacloud.script.run in addition to ops.\n\nRate limits apply per task, per workspace and day, and per profile and hour.\n"},
	{"user/how-to/schedule-a-workflow.md", "en", "---\ntitle: Schedule a workflow\n---\n# Schedule a workflow\n\nSchedules start a workflow on a five-field cron expression in an IANA time zone, for example `0 6 * * 1-5` in Europe/Berlin. Pause a schedule to skip runs without losing its settings.\n"},
	{"user/how-to/deploy-an-app.mdx", "en", "---\ntitle: Deploy an app\n---\n# Deploy an app\n\nDeploying builds the app's current source and routes it at its public URL. Apply pending migrations first. Agents must confirm a deploy in two steps: the first call returns a changes summary and a confirmation token valid for five minutes.\n"},
	{"admin/external-mcp-gateway.mdx", "en", "---\ntitle: Connect an external MCP coordinator\n---\n# Connect an external MCP coordinator\n\nCreate a workspace API token with the scopes mcp:read and mcp:ops, then point your MCP client at /api/mcp with `Authorization: Bearer scmt_...`. Deploy tools are never reachable from outside. Limits: 50 reads per tool and hour, 30 ops per token and hour, 100 ops per workspace and day.\n"},
	{"admin/agent-profiles.md", "en", "---\ntitle: Agent profiles\n---\n# Agent profiles\n\nAn agent profile carries the MCP allowlist and an optional script allowlist. One profile per workspace can be the workspace default; profile-less tasks inherit it instead of the read-only fallback.\n"},
	{"developer/mcp-tools.mdx", "en", "---\ntitle: MCP tool reference\n---\n# MCP tool reference\n\nEvery tool is workspace-scoped from the task session. Runs, events and approvals never leak across workspaces. resources.list returns kind, name and status only. See spec.get mcp_catalog for the machine-readable list.\n"},
	{"developer/workflow-runs.md", "en", "---\ntitle: Workflow runs and events\n---\n# Workflow runs and events\n\nA workflow run's event log carries a per-node step timeline: workflow_node_started, workflow_node_waiting, workflow_node_completed, workflow_node_failed and workflow_node_skipped. Page through it with run.events using after_sequence, limit and tail.\n"},
	{"de/user/how-to/approve-agent-actions.mdx", "de", "---\ntitle: Agentenaktionen freigeben\n---\n# Agentenaktionen freigeben\n\nAgenten halten an Entscheidungspunkten an, wenn sie einen Menschen brauchen. Unter **Freigaben** siehst du alle wartenden Gates. Frage-Gates darf ein Koordinator beantworten; Tool-, Visual- und Stufenwechsel-Gates sowie Workflow-Human-Gates entscheidet immer ein Mensch.\n"},
	{"de/user/concepts/permissions-and-tiers.mdx", "de", "---\ntitle: Berechtigungen und MCP-Tool-Stufen\n---\n# Berechtigungen und MCP-Tool-Stufen\n\nZwei Schranken entscheiden, was ein Agent darf: die Deployment-Edition und die MCP-Allowlist des Agentprofils. Die Tools sind auf fünf Stufen verteilt: Baseline, Read, Ops, Scaffold und Deploy.\n"},
	{"de/admin/external-mcp-gateway.mdx", "de", "---\ntitle: Einen externen MCP-Koordinator anbinden\n---\n# Einen externen MCP-Koordinator anbinden\n\nErstelle ein Workspace-API-Token mit den Scopes mcp:read und mcp:ops und richte deinen MCP-Client auf /api/mcp. Die Deploy-Ebene ist extern nie erreichbar.\n"},
}

// body strips YAML frontmatter and returns the title and the text.
func (p docPage) body() (title, text string) {
	text = p.raw
	if rest, ok := strings.CutPrefix(text, "---\n"); ok {
		if front, after, found := strings.Cut(rest, "\n---\n"); found {
			for _, line := range strings.Split(front, "\n") {
				if v, ok := strings.CutPrefix(line, "title:"); ok {
					title = strings.TrimSpace(v)
				}
			}
			text = after
		}
	}
	return title, text
}

// corpusPath is the path a caller uses: German pages drop the de/ prefix.
func (p docPage) corpusPath() string { return strings.TrimPrefix(p.path, "de/") }

func docsTools() map[string]tool {
	return map[string]tool{
		"docs.search": {required: []string{"query"}, handle: docsSearch},
		"docs.get":    {required: []string{"path"}, handle: docsGet},
		"spec.get":    {required: []string{"name"}, handle: specGet},
	}
}

func lang(r *request) (string, error) {
	switch l := r.str("lang"); l {
	case "", "en":
		return "en", nil
	case "de":
		return "de", nil
	default:
		return "", refuse("lang must be en or de, not %q", l)
	}
}

type docHit struct {
	Path  string `json:"path"`
	Title string `json:"title"`
	Lang  string `json:"lang"`
	Score int    `json:"score"`
}

// docsSearch requires every term in a page's path, title or body and ranks
// by term frequency (docs.search, docs/requirements.md#read-caps).
func docsSearch(_ *workspace, r *request) (any, error) {
	l, err := lang(r)
	if err != nil {
		return nil, err
	}
	terms := strings.Fields(strings.ToLower(r.str("query")))
	hits := []docHit{}
	for _, p := range docsCorpus {
		title, text := p.body()
		if p.lang != l {
			continue
		}
		if score := termScore(strings.ToLower(p.path+" "+title+" "+text), terms); score > 0 {
			hits = append(hits, docHit{Path: p.corpusPath(), Title: title, Lang: l, Score: score})
		}
	}
	slices.SortStableFunc(hits, func(a, b docHit) int { return b.Score - a.Score })
	return list("hits", hits[:min(len(hits), r.limit(10, 50))]), nil
}

// docsGet reads one page; lang "de" serves the German mirror when it exists
// and says so when it falls back to English.
func docsGet(_ *workspace, r *request) (any, error) {
	l, err := lang(r)
	if err != nil {
		return nil, err
	}
	path := strings.TrimPrefix(r.str("path"), "/")
	if !strings.HasSuffix(path, ".md") && !strings.HasSuffix(path, ".mdx") {
		return nil, refuse("path %q must end in .md or .mdx; find pages with docs.search", path)
	}
	page, served := lookupDoc(path, l)
	if page == nil {
		return nil, refuse("no documentation page at %s; find pages with docs.search", path)
	}
	title, text := page.body()
	truncated := len(text) > maxDocBody
	if truncated {
		text = text[:maxDocBody]
	}
	return map[string]any{"path": path, "lang": served, "title": title, "body": text, "truncated": truncated}, nil
}

func lookupDoc(path, l string) (*docPage, string) {
	for _, want := range []string{l, "en"} {
		full := path
		if want == "de" {
			full = "de/" + path
		}
		for i := range docsCorpus {
			if docsCorpus[i].path == full {
				return &docsCorpus[i], want
			}
		}
	}
	return nil, ""
}

// specGet serves one contract, narrowed by an RFC 6901 pointer. A node
// whose rendering exceeds 64 KiB is cut and its child keys are listed so
// the caller can navigate down (spec.get, docs/requirements.md#read-caps).
func specGet(_ *workspace, r *request) (any, error) {
	name := r.str("name")
	doc, ok := contracts(r.catalog)[name]
	if !ok {
		return nil, refuse("no contract named %q; use openapi_public, workflow_schema, mcp_catalog or command_catalog", name)
	}
	pointer := r.str("pointer")
	node, err := resolvePointer(doc, pointer)
	if err != nil {
		return nil, refuse("contract %s: %v", name, err)
	}
	rendered, err := json.MarshalIndent(node, "", "  ")
	if err != nil {
		return nil, err
	}
	out := map[string]any{"name": name, "pointer": pointer, "truncated": len(rendered) > maxDocBody}
	if len(rendered) > maxDocBody {
		out["body"], out["child_keys"] = string(rendered[:maxDocBody]), childKeys(node)
	} else {
		out["body"] = string(rendered)
	}
	return out, nil
}

// resolvePointer walks doc along an RFC 6901 pointer ("" is the whole
// document; "~1" is "/" and "~0" is "~" inside a token).
func resolvePointer(doc any, pointer string) (any, error) {
	if pointer == "" {
		return doc, nil
	}
	if !strings.HasPrefix(pointer, "/") {
		return nil, fmt.Errorf("pointer %q must start with /", pointer)
	}
	node := doc
	for _, tok := range strings.Split(pointer[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		next, ok := member(node, tok)
		if !ok {
			return nil, fmt.Errorf("pointer %s: no member %q here; its keys are %s", pointer, tok, strings.Join(childKeys(node), ", "))
		}
		node = next
	}
	return node, nil
}

func member(node any, tok string) (any, bool) {
	switch n := node.(type) {
	case map[string]any:
		v, ok := n[tok]
		return v, ok
	case []any:
		i, err := strconv.Atoi(tok)
		if err != nil || i < 0 || i >= len(n) {
			return nil, false
		}
		return n[i], true
	}
	return nil, false
}

func childKeys(node any) []string {
	keys := []string{}
	switch n := node.(type) {
	case map[string]any:
		for k := range n {
			keys = append(keys, k)
		}
		sort.Strings(keys)
	case []any:
		for i := range n {
			keys = append(keys, strconv.Itoa(i))
		}
	}
	return keys
}
