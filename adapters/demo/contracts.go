package demo

import (
	"encoding/json"
	"fmt"
)

// contracts returns the four committed machine contracts spec.get serves
// (docs/requirements.md#read-caps: openapi_public, workflow_schema, mcp_catalog, command_catalog),
// decoded into plain JSON values so pointers can walk them. The management
// spec is deliberately absent. They are built per call: cheap, and no
// caller can alter another's copy.
func contracts(tools []string) map[string]any {
	out := map[string]any{}
	for name, raw := range map[string]string{
		"openapi_public": openAPIPublic, "workflow_schema": workflowSchema, "command_catalog": commandCatalog,
	} {
		var v any
		if err := json.Unmarshal([]byte(raw), &v); err != nil {
			panic(fmt.Sprintf("demo: contract %s is not valid JSON: %v", name, err))
		}
		out[name] = v
	}
	entries := make([]any, len(tools))
	for i, t := range tools {
		entries[i] = map[string]any{"name": t}
	}
	out["mcp_catalog"] = map[string]any{"surface": "supacloud", "tool_count": len(tools), "tools": entries}
	return out
}

const openAPIPublic = `{
  "openapi": "3.1.0",
  "info": {"title": "SupaCloud public API", "version": "2024-11"},
  "paths": {
    "/v1/projects": {"get": {"summary": "List projects", "responses": {"200": {"description": "Projects"}}}},
    "/v1/projects/{project_id}": {"get": {"summary": "Read a project", "parameters": [{"name": "project_id", "in": "path", "required": true, "schema": {"type": "string"}}], "responses": {"200": {"description": "Project"}, "404": {"description": "Not found"}}}},
    "/v1/tasks": {"post": {"summary": "Create a task", "responses": {"201": {"description": "Task created"}}}},
    "/v1/tasks/{task_id}": {"get": {"summary": "Read a task", "responses": {"200": {"description": "Task"}}}},
    "/v1/apps": {"get": {"summary": "List apps", "responses": {"200": {"description": "Apps"}}}},
    "/v1/workflows/{workflow_id}/runs": {"post": {"summary": "Trigger a workflow run", "responses": {"202": {"description": "Run started"}}}}
  },
  "components": {"schemas": {
    "Project": {"type": "object", "required": ["id", "name"], "properties": {"id": {"type": "string"}, "name": {"type": "string"}, "git_provider": {"type": "string"}}},
    "Task": {"type": "object", "required": ["id", "status"], "properties": {"id": {"type": "string"}, "status": {"type": "string", "enum": ["queued", "running", "waiting", "completed", "failed", "cancelled"]}, "cost_usd": {"type": "number"}}}
  }}
}`

const workflowSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "SupaCloud workflow definition",
  "type": "object",
  "required": ["nodes", "edges"],
  "properties": {
    "nodes": {"type": "array", "items": {"type": "object", "required": ["id", "kind"], "properties": {
      "id": {"type": "string"},
      "kind": {"enum": ["agent", "script", "http", "human_gate", "loop"]},
      "on_failure": {"enum": ["stop", "continue"], "default": "stop"},
      "body": {"type": "array", "items": {"type": "string"}, "description": "Node ids a loop runs per item."}
    }}},
    "edges": {"type": "array", "items": {"type": "object", "required": ["from", "to"], "properties": {"from": {"type": "string"}, "to": {"type": "string"}}}}
  }
}`

const commandCatalog = `{
  "commands": [
    {"name": "/deploy", "description": "Deploy the current app after confirmation."},
    {"name": "/rerun", "description": "Re-run the failed node of a workflow run."},
    {"name": "/approve", "description": "Open the approvals inbox."},
    {"name": "/budget", "description": "Show the workspace's remaining budget."}
  ]
}`
