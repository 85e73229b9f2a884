package demo

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// cronSpec is a parsed five-field cron expression (minute hour
// day-of-month month day-of-week), each field a set of allowed values.
type cronSpec struct {
	minute, hour, dom, month, dow [64]bool
	domAny, dowAny                bool
}

var cronFields = []struct {
	name     string
	min, max int
}{{"minute", 0, 59}, {"hour", 0, 23}, {"day of month", 1, 31}, {"month", 1, 12}, {"day of week", 0, 7}}

// parseCron accepts numbers, "*", ranges "a-b", steps "/n" and lists "a,b".
// Errors name the field and the offending part.
func parseCron(expr string) (*cronSpec, error) {
	fields := strings.Fields(expr)
	if len(fields) != 5 {
		return nil, fmt.Errorf("cron expression %q has %d fields; use five: minute hour day-of-month month day-of-week, e.g. '0 6 * * 1-5'", expr, len(fields))
	}
	c := &cronSpec{domAny: fields[2] == "*", dowAny: fields[4] == "*"}
	sets := []*[64]bool{&c.minute, &c.hour, &c.dom, &c.month, &c.dow}
	for i, f := range fields {
		if err := parseCronField(f, cronFields[i].min, cronFields[i].max, sets[i]); err != nil {
			return nil, fmt.Errorf("cron %s field %q: %w", cronFields[i].name, f, err)
		}
	}
	if c.dow[7] { // 7 is Sunday too
		c.dow[0] = true
	}
	return c, nil
}

func parseCronField(f string, lo, hi int, set *[64]bool) error {
	for _, part := range strings.Split(f, ",") {
		rng, stepStr, hasStep := strings.Cut(part, "/")
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepStr)
			if err != nil || n < 1 {
				return fmt.Errorf("step %q is not a positive number", stepStr)
			}
			step = n
		}
		from, to, err := cronRange(rng, lo, hi, hasStep)
		if err != nil {
			return err
		}
		for v := from; v <= to; v += step {
			set[v] = true
		}
	}
	return nil
}

func cronRange(s string, lo, hi int, stepped bool) (int, int, error) {
	if s == "*" {
		return lo, hi, nil
	}
	a, b, isRange := strings.Cut(s, "-")
	from, err := strconv.Atoi(a)
	if err != nil || from < lo || from > hi {
		return 0, 0, fmt.Errorf("%q is not a number from %d to %d", a, lo, hi)
	}
	to := from
	if stepped {
		to = hi
	}
	if isRange {
		if to, err = strconv.Atoi(b); err != nil || to < from || to > hi {
			return 0, 0, fmt.Errorf("range %q must go upwards within %d-%d", s, lo, hi)
		}
	}
	return from, to, nil
}

// next returns the first minute strictly after t that matches, searching at
// most a little over four years (enough for "29 2 29 2 *").
func (c *cronSpec) next(t time.Time) time.Time {
	t = t.Truncate(time.Minute).Add(time.Minute)
	limit := t.AddDate(5, 0, 0)
	for t.Before(limit) {
		switch {
		case !c.month[int(t.Month())]:
			t = time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, t.Location())
		case !c.dayMatches(t):
			t = time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, t.Location())
		case !c.hour[t.Hour()]:
			t = t.Truncate(time.Hour).Add(time.Hour)
		case !c.minute[t.Minute()]:
			t = t.Add(time.Minute)
		default:
			return t
		}
	}
	return time.Time{}
}

// dayMatches applies cron's rule: when both day fields are restricted, a
// day matching either one runs.
func (c *cronSpec) dayMatches(t time.Time) bool {
	dom, dow := c.dom[t.Day()], c.dow[int(t.Weekday())]
	switch {
	case c.domAny && c.dowAny:
		return true
	case c.domAny:
		return dow
	case c.dowAny:
		return dom
	default:
		return dom || dow
	}
}
