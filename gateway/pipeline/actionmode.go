package pipeline

import (
	"fmt"
	"strings"

	"github.com/mcpgate/mcpgate/gateway"
)

// actionMode is the one cc_server mode in which a tool that declares an
// action class may run (docs/requirements.md#cc-action-classes: action-class tools refuse the read-only
// modes plan, review and orchestrate); a credential without a mode is in
// it.
const actionMode = "chat"

// reasonActionReadOnlyMode is the reason code of the fallback's refusal,
// the same code the ccserver policy's guard gives, so that dashboards and
// tests match either source.
const reasonActionReadOnlyMode = "action.read_only_mode"

// checkActionMode refuses a call of a tool whose catalog entry declares
// action classes when the credential's mode is not chat, after the policy
// allowed it: the catalog is a second, fail-closed source, as its
// requiresApproval flag is (needsApproval), so a bundle that forgets the
// action guard cannot let such a tool act in a read-only mode. The mode is
// the credential's (Principal.Mode), never what the decision says it
// applied. Tools without action classes, and every SupaCloud tool, pass.
func checkActionMode(c *Call) error {
	mode := c.Principal.Mode
	if len(c.Tool.ActionClasses) == 0 || mode == "" || mode == actionMode {
		return nil
	}
	msg := fmt.Sprintf("tool %s declares the action classes %s, and only %s mode may run it (this conversation is in %s mode), so it was refused and nothing ran; continue in chat mode to control a rig",
		c.Tool.Name, strings.Join(c.Tool.ActionClasses, ", "), actionMode, auditText(clip(mode, 32)))
	return withDecision(&gateway.Error{Code: gateway.EForbidden, Message: msg,
		Reasons: []gateway.Reason{{Code: reasonActionReadOnlyMode, Message: msg}}}, c.Decision)
}
