package gateway

import (
	"encoding/json"
	"time"
)

// PinsTable is the store's table of bridged tools' pins; a change of it
// is announced on the change feed under this name (Change.Table), so
// every replica reads the pins again.
const PinsTable = "upstream_tool_pins"

// PinState is the review state of a bridged tool's pinned definition
// (docs/requirements.md#pinned-tools).
type PinState string

// The states of a pin.
const (
	// PinPinned: the tool is served while its listed definition hashes
	// to the pin's Hash.
	PinPinned PinState = "pinned"
	// PinQuarantined: the tool's listed definition (Current) waits for a
	// person's review; it is not listed, and a call is refused with
	// tool.quarantined.
	PinQuarantined PinState = "quarantined"
	// PinRejected: a person rejected Current; the tool stays out while
	// the upstream lists that definition.
	PinRejected PinState = "rejected"
)

// The changes that quarantine a tool (ToolPin.Change).
const (
	// PinChangeDefinition: the listed definition differs from the pinned
	// one (a changed description is enough).
	PinChangeDefinition = "definition"
	// PinChangeNew: the tool appeared after the upstream's first review,
	// and the upstream's new_tools is quarantine.
	PinChangeNew = "new"
	// PinChangeRename: the tool appeared under a new name with the
	// definition of a tool the upstream no longer lists (RenamedFrom).
	PinChangeRename = "rename"
)

// ToolPin is the pinned definition of one bridged tool, shared by every
// replica through the store. Hash is "sha256:<hex>" of the RFC 8785
// canonical form of Definition (gateway/canon.Hash); empty for a tool
// never approved (a new tool, a rename). Current and CurrentHash are the
// listed definition under review, empty when none.
type ToolPin struct {
	Surface     string          `json:"surface"`
	Upstream    string          `json:"upstream"`
	Tool        string          `json:"tool"` // the upstream's own name
	State       PinState        `json:"state"`
	Change      string          `json:"change,omitempty"`
	RenamedFrom string          `json:"renamed_from,omitempty"`
	Hash        string          `json:"hash,omitempty"`
	Definition  json.RawMessage `json:"definition,omitempty"`
	CurrentHash string          `json:"current_hash,omitempty"`
	Current     json.RawMessage `json:"current,omitempty"`
	DecidedBy   string          `json:"decided_by,omitempty"`
	DecidedAt   *time.Time      `json:"decided_at,omitempty"`
	UpdatedAt   time.Time       `json:"updated_at"`
}
