package gateway

import (
	"strconv"
	"strings"
	"time"
)

// Session flow rules (docs/requirements.md#flow-rules): the
// gateway records, per flow key, the data labels that allowed calls have
// read and the tools they called, and hands them to the policy as
// input.session, so that a rule can decide a call by what the same
// session did before ("no egress after a sensitive read").

// MaxFlowTools bounds FlowSession.Tools: the distinct tools a session's
// allowed calls called, the first MaxFlowTools of them kept, so that a
// long session's record (and the policy input) stays small.
const MaxFlowTools = 64

// FlowRead is the first allowed call of a session whose result held data
// of Label: its tool, its audit row and when it was reserved (UTC). The
// flow rule set names it in a refusal ("which earlier call tainted the
// session").
type FlowRead struct {
	Label   string    `json:"label"`
	Tool    string    `json:"tool"`
	AuditID int64     `json:"audit_id"`
	Time    time.Time `json:"time"`
}

// FlowSession is the recorded history of one flow key: Reads holds one
// FlowRead per label read so far, sorted by label; Tools the distinct
// tools called by allowed calls, in the order of their first call, at
// most MaxFlowTools. Labels are never removed while the session lasts, so
// len(Reads) only grows: FlowRecord.Seen compares it.
type FlowSession struct {
	Key   string
	Reads []FlowRead
	Tools []string
}

// Labels returns the labels of s's reads, sorted; nil for a nil s.
func (s *FlowSession) Labels() []string {
	if s == nil {
		return nil
	}
	out := make([]string, len(s.Reads))
	for i, r := range s.Reads {
		out[i] = r.Label
	}
	return out
}

// FlowRecord is what the reservation of an allowed call records of it in
// its flow key's history, in the transaction of its audit row
// (Reservation.Flow): Reads are the labels of the data its result holds
// (the decision's obligations.flow_reads), Tool the tool it calls.
// WorkspaceID and TaskID name whom the record belongs to, so that it ends
// with its task. Seen is how many labels the session had when the call
// was decided (len(FlowSession.Reads)): the store refuses the record, and
// so the whole reservation, when the key holds more by the time it is
// locked (ReservationResult.FlowChanged), since another call's read came
// in between and the decision may no longer hold.
type FlowRecord struct {
	Key         string
	WorkspaceID string
	TaskID      string
	Tool        string
	Reads       []string
	Seen        int
}

// FlowKey is the key of the session p's calls on surface belong to
// (docs/requirements.md#flow-rules): the API token of a coordinator; the task of a SupaCloud
// agent; on cc_server the conversation (JWT claim conversation_id), else
// the principal and its ticket. "" when p has none of them (an agent
// without a task): such calls have no history. Each part is written with
// its length, so that no two principals share a key whatever their ids
// hold.
func FlowKey(surface string, p *Principal) string {
	if surface == "" {
		surface = SurfaceSupaCloud
	}
	switch {
	case p.Kind == PrincipalCoordinator && p.TokenFingerprint != "":
		return flowKey(surface, "token", p.TokenFingerprint)
	case surface == SurfaceCCServer && p.ConversationID != "":
		return flowKey(surface, "conversation", p.ConversationID)
	case surface == SurfaceCCServer:
		return flowKey(surface, "run", string(p.Kind), p.Subject, p.TicketID)
	case p.TaskID != "":
		return flowKey(surface, "task", p.WorkspaceID, p.TaskID)
	}
	return ""
}

func flowKey(surface, kind string, parts ...string) string {
	var b strings.Builder
	b.WriteString(surface)
	b.WriteByte('/')
	b.WriteString(kind)
	for _, s := range parts {
		b.WriteByte('/')
		b.WriteString(strconv.Itoa(len(s)))
		b.WriteByte(':')
		b.WriteString(s)
	}
	return b.String()
}
