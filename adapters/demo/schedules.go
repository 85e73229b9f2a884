package demo

import (
	"time"
	_ "time/tzdata" // schedules name IANA zones; do not depend on the host's zoneinfo
)

type schedule struct {
	ID         string         `json:"id"`
	Name       string         `json:"name"`
	WorkflowID string         `json:"workflow_id"`
	ProjectID  string         `json:"project_id"`
	Cron       string         `json:"cron"`
	Timezone   string         `json:"timezone"`
	Inputs     map[string]any `json:"inputs"`
	Status     string         `json:"status"`
	Paused     bool           `json:"paused"`
	NextRunAt  *time.Time     `json:"next_run_at"`
	LastRunAt  *time.Time     `json:"last_run_at"`
	CreatedAt  time.Time      `json:"created_at"`
	UpdatedAt  time.Time      `json:"updated_at"`
}

func genSchedules(w *workspace, g *gen) {
	crons := []string{"30 2 * * *", "0 6 * * 1-5", "*/15 * * * *", "0 9 * * 1"}
	for i, wf := range w.workflows {
		s := &schedule{
			ID: w.newID("sch"), Name: wf.Name + " (" + []string{"nightly", "weekday mornings", "every 15 minutes", "weekly"}[i%4] + ")",
			WorkflowID: wf.ID, ProjectID: wf.ProjectID, Cron: crons[i%4], Timezone: g.pick("UTC", "Europe/Berlin", "America/New_York"),
			Inputs: map[string]any{}, Status: "active", CreatedAt: g.ago(10*24*time.Hour, 60*24*time.Hour),
		}
		s.UpdatedAt = s.CreatedAt
		s.LastRunAt = ptr(g.ago(time.Hour, 24*time.Hour))
		if i == len(w.workflows)-1 {
			s.Status, s.Paused = "paused", true
		}
		s.refreshNext(g.base)
		w.schedules = append(w.schedules, s)
	}
}

// refreshNext recomputes NextRunAt in the schedule's zone; paused
// schedules have none.
func (s *schedule) refreshNext(now time.Time) {
	s.NextRunAt = nil
	spec, err := parseCron(s.Cron)
	loc, lerr := time.LoadLocation(s.Timezone)
	if s.Paused || err != nil || lerr != nil {
		return
	}
	if next := spec.next(now.In(loc)); !next.IsZero() {
		s.NextRunAt = ptr(next.UTC())
	}
}

func scheduleTools() map[string]tool {
	return map[string]tool{
		"schedules.list":  {handle: schedulesList},
		"schedule.create": {required: []string{"name", "workflow_id", "cron"}, handle: scheduleCreate},
		"schedule.update": {required: []string{"schedule_id"}, handle: scheduleUpdate},
		"schedule.pause":  {required: []string{"schedule_id"}, handle: schedulePause},
		"schedule.resume": {required: []string{"schedule_id"}, handle: scheduleResume},
	}
}

func schedulesList(w *workspace, r *request) (any, error) {
	pid := r.str("project_id")
	return list("schedules", filter(w.schedules, 0, func(s *schedule) bool { return pid == "" || s.ProjectID == pid })), nil
}

func (w *workspace) scheduleByID(id string) *schedule {
	return find(w.schedules, func(s *schedule) bool { return s.ID == id })
}

// checkTiming validates a cron expression and an IANA time zone.
func checkTiming(cron, tz string) error {
	if _, err := parseCron(cron); err != nil {
		return refuse("%v", err)
	}
	if _, err := time.LoadLocation(tz); err != nil || tz == "" || tz == "Local" {
		return refuse("timezone %q is not an IANA time zone; use e.g. UTC or Europe/Berlin", tz)
	}
	return nil
}

func scheduleCreate(w *workspace, r *request) (any, error) {
	wf := w.workflowByID(r.str("workflow_id"))
	if wf == nil {
		return nil, notFound("workflow", r.str("workflow_id"))
	}
	tz := r.str("timezone")
	if tz == "" {
		tz = "UTC"
	}
	if err := checkTiming(r.str("cron"), tz); err != nil {
		return nil, err
	}
	s := &schedule{
		ID: w.newID("sch"), Name: r.str("name"), WorkflowID: wf.ID, ProjectID: wf.ProjectID, Cron: r.str("cron"),
		Timezone: tz, Inputs: r.object("inputs"), Status: "active", CreatedAt: r.now, UpdatedAt: r.now,
	}
	s.refreshNext(r.now)
	w.schedules = append(w.schedules, s)
	return map[string]any{"schedule": s, "created": true}, nil
}

func scheduleUpdate(w *workspace, r *request) (any, error) {
	s := w.scheduleByID(r.str("schedule_id"))
	if s == nil {
		return nil, notFound("schedule", r.str("schedule_id"))
	}
	cron, tz := s.Cron, s.Timezone
	if r.has("cron") {
		cron = r.str("cron")
	}
	if r.has("timezone") {
		tz = r.str("timezone")
	}
	if err := checkTiming(cron, tz); err != nil {
		return nil, err
	}
	changed := []string{}
	set := func(field string, apply func()) {
		if r.has(field) {
			apply()
			changed = append(changed, field)
		}
	}
	set("name", func() { s.Name = r.str("name") })
	set("cron", func() { s.Cron = cron })
	set("timezone", func() { s.Timezone = tz })
	set("inputs", func() { s.Inputs = r.object("inputs") })
	if len(changed) == 0 {
		return nil, refuse("schedule.update needs at least one of name, cron, timezone or inputs")
	}
	s.UpdatedAt = r.now
	s.refreshNext(r.now)
	return map[string]any{"schedule": s, "changed_fields": changed}, nil
}

// schedulePause is idempotent: pausing a paused schedule reports changed
// false instead of failing, so retries are harmless.
func schedulePause(w *workspace, r *request) (any, error) {
	return setPaused(w, r, true)
}

func scheduleResume(w *workspace, r *request) (any, error) {
	return setPaused(w, r, false)
}

func setPaused(w *workspace, r *request, paused bool) (any, error) {
	s := w.scheduleByID(r.str("schedule_id"))
	if s == nil {
		return nil, notFound("schedule", r.str("schedule_id"))
	}
	changed := s.Paused != paused
	s.Paused, s.Status = paused, map[bool]string{true: "paused", false: "active"}[paused]
	if changed {
		s.UpdatedAt = r.now
	}
	s.refreshNext(r.now)
	return map[string]any{"schedule": s, "changed": changed}, nil
}
