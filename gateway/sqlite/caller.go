package sqlite

// profileJSON renders an agent_profiles row p as a gateway.Profile object.
const profileJSON = `json_object('workspace_id', p.workspace_id, 'id', p.id, 'name', p.name,
          'allowlist', json(p.allowlist), 'script_allowlist', json(p.script_allowlist),
          'is_workspace_default', json(CASE WHEN p.is_workspace_default THEN 'true' ELSE 'false' END))`

// callerQuery loads everything LoadCaller returns in one query: the
// workspace row plus one JSON-valued subquery per optional part, and
// whether the requested profile is one deleted from the workspace. Every
// subquery is keyed by the workspace id, so a profile, task or member of
// another workspace is never returned (workspace isolation).
// Empty override sets are NULL, as on PostgreSQL.
// ?1 workspace, ?2 acting user, ?3 requested profile, ?4 task.
const callerQuery = `
SELECT w.id, w.name, w.slug, w.org_plan, w.created_at,
  (SELECT json_object('workspace_id', m.workspace_id, 'user_id', m.user_id,
          'role', m.role, 'seat_type', m.seat_type)
     FROM members m WHERE m.workspace_id = w.id AND m.user_id = ?2) AS member,
  (SELECT ` + profileJSON + `
     FROM agent_profiles p WHERE p.workspace_id = w.id AND p.id = ?3) AS profile,
  (SELECT ` + profileJSON + `
     FROM agent_profiles p WHERE p.workspace_id = w.id AND p.is_workspace_default = 1) AS default_profile,
  (SELECT json_object('name', st.name, 'permissions', json(st.permissions),
          'enterprise_only', json(CASE WHEN st.enterprise_only THEN 'true' ELSE 'false' END))
     FROM members m JOIN seat_types st ON st.name = m.seat_type
    WHERE m.workspace_id = w.id AND m.user_id = ?2) AS seat_type,
  (SELECT json_object('name', o.name, 'permissions', json(o.permissions))
     FROM org_plans o WHERE o.name = w.org_plan) AS org_plan,
  (SELECT CASE WHEN count(*) = 0 THEN NULL ELSE
          json_group_object(o.permission_key, json(CASE WHEN o.granted THEN 'true' ELSE 'false' END)) END
     FROM member_permission_overrides o WHERE o.workspace_id = w.id AND o.user_id = ?2) AS user_overrides,
  (SELECT CASE WHEN count(*) = 0 THEN NULL ELSE
          json_group_object(o.permission_key, json(CASE WHEN o.granted THEN 'true' ELSE 'false' END)) END
     FROM workspace_permission_overrides o WHERE o.workspace_id = w.id) AS workspace_overrides,
  (SELECT json_object('workspace_id', t.workspace_id, 'id', t.id, 'status', t.status,
          'updated_at', t.updated_at)
     FROM tasks t WHERE t.workspace_id = w.id AND t.id = ?4) AS task,
  EXISTS (SELECT 1 FROM deleted_agent_profiles d WHERE d.workspace_id = w.id AND d.id = ?3) AS profile_deleted,
  w.flow_rules
FROM workspaces w
WHERE w.id = ?1`
