package pipeline

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/policy"
	"github.com/mcpgate/mcpgate/gateway/store"
)

// Session flow rules (docs/policy.md, "Flow rules"; docs/requirements.md#flow-rules): for a
// workspace whose admin or policy switches the rule set on, loadSession reads the
// history of the call's flow key before the decision (the policy's
// input.session), and the reservation records the call in it
// (gateway.Reservation.Flow) in the transaction of its audit row, under a
// lock on the key, refusing the record when another call's read came in
// between: the call is then decided again (maxFlowRetries).

// FlowStore is an optional interface of the Store (the contract's Flows
// part): the session histories. A Store without it turns flow rules off.
type FlowStore = store.Flows

// FlowScope is an optional interface of a Decider (*policy.Engine,
// *policy.Snapshot): whether its bundle switches the flow rule set on
// for a workspace. A Decider without it gets input.session only for the
// workspaces whose admin switched flow rules on (flowRulesOn).
type FlowScope interface {
	FlowRules(workspaceID string) bool
}

// maxFlowRetries bounds how many times a call is decided again because
// its session read new labels while it was being decided; past it the
// call is refused (EConflict) and the client may call again.
const maxFlowRetries = 3

// errFlowChanged is the reservation's answer when the session's labels
// changed since the decision (gateway.ReservationResult.FlowChanged).
var errFlowChanged = errors.New("the session read new data while the call was being decided")

// flowRestart is the index in callSteps of the step a call whose session
// changed restarts at: loadSession, then the decision and what follows.
var flowRestart = func() int {
	for i, s := range callSteps {
		if reflect.ValueOf(s).Pointer() == reflect.ValueOf((*Pipeline).loadSession).Pointer() {
			return i
		}
	}
	panic("pipeline: loadSession is not a step of callSteps")
}()

// loadSession loads the history of the call's flow key when flow rules
// are on for the principal's workspace (flowRulesOn) and the store keeps
// histories; c.Session stays nil otherwise (no input.session, nothing
// recorded). A history this process read within flowCacheTTL stands in
// for the read, unless the call is decided again because the history
// changed (c.flowStale). A store that cannot read it refuses the call.
func (pl *Pipeline) loadSession(ctx context.Context, c *Call) error {
	c.Session, c.flowKey = nil, ""
	c.flowSwitch = c.Caller.FlowRulesOn(pl.callWorkspace(c))
	fs := pl.Flows
	if fs == nil {
		fs, _ = pl.Store.(FlowStore)
	}
	if fs == nil || !flowRulesOn(c) {
		return nil
	}
	key := gateway.FlowKey(pl.surface(), c.Principal)
	if key == "" {
		return nil
	}
	now := pl.now()
	if s := pl.flows.get(key, now); s != nil && !c.flowStale {
		c.Session, c.flowKey = s, key
		return nil
	}
	s, err := fs.FlowSession(c.storeContext(ctx), key)
	if err != nil {
		return gateway.Wrap(gateway.EUnavailable, err, "the audit store could not read this session's history, which the flow rules decide on, so "+c.Params.Name+" was refused; retry when the store is back")
	}
	pl.flows.put(key, s, now)
	c.Session, c.flowKey = s, key
	return nil
}

// flowRulesOn reports whether flow rules are on for the call's
// workspace: its admin switched them on (c.flowSwitch, the policy's
// input.workspace.flow_rules), or the policy in force does in its data
// (FlowScope).
func flowRulesOn(c *Call) bool {
	if c.flowSwitch {
		return true
	}
	scope, ok := c.Policy.(FlowScope)
	return ok && scope.FlowRules(c.Principal.WorkspaceID)
}

// callWorkspace is the workspace the call acts in: the credential's, or,
// on a surface whose policy takes it from the call (WorkspaceFromPolicy:
// a cc_server user not pinned to one), the workspace_id argument, which
// counts only where the caller is a member (gateway.Caller.FlowRulesIn
// holds member workspaces only).
func (pl *Pipeline) callWorkspace(c *Call) string {
	if c.Principal.WorkspaceID != "" || !pl.WorkspaceFromPolicy {
		return c.Principal.WorkspaceID
	}
	ws, _ := c.Params.Arguments["workspace_id"].(string)
	return ws
}

// flowRecord is what the call's reservation records in its session's
// history: nil without a loaded session.
func flowRecord(c *Call) *gateway.FlowRecord {
	if c.Session == nil {
		return nil
	}
	return &gateway.FlowRecord{Key: c.flowKey, WorkspaceID: c.Event.WorkspaceID, TaskID: c.Principal.TaskID,
		Tool: c.Tool.Name, Reads: c.Decision.Obligations.FlowReads, Seen: len(c.Session.Reads)}
}

// ToolRef is what the policy is told of the call's tool (ToolRef), with
// the addressed record and the session's history as loaded.
func (c *Call) ToolRef() policy.ToolRef {
	r := ToolRef(c.Tool, c.Resource)
	r.Session, r.FlowRules = c.Session, c.flowSwitch
	return r
}

// flowChanged is the refusal of a call whose session kept changing while
// it was decided again.
func flowChanged(c *Call) error {
	return withDecision(gateway.Wrap(gateway.EConflict, errFlowChanged,
		fmt.Sprintf("%s was not run: this session read new data %d times while the call was being decided; call again", c.Tool.Name, maxFlowRetries)), c.Decision)
}

// withNotices adds the decision's notices (the reasons of an allowed
// call, such as flow.tainted, which names the call that tainted the
// session) to err, a refusal of the approval step, so that whoever is
// refused learns why an approval was needed.
func withNotices(err error, d *gateway.Decision) error {
	var ge *gateway.Error
	if !errors.As(err, &ge) || d == nil || len(d.Reasons) == 0 {
		return err
	}
	for _, r := range d.Reasons {
		ge.Message += "; " + r.Message
	}
	ge.Reasons = append(ge.Reasons, d.Reasons...)
	return err
}
