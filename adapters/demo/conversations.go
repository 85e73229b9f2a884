package demo

import (
	"slices"
	"time"
)

// conversation is a support conversation of a Chatwoot or Intercom
// resource (docs/requirements.md#conversation-grant, #596).
type conversation struct {
	ID         string            `json:"id"`
	Resource   string            `json:"resource"`
	Provider   string            `json:"provider"`
	Subject    string            `json:"subject"`
	Contact    string            `json:"contact"`
	Status     string            `json:"status"` // open, pending, resolved
	AssigneeID string            `json:"assignee_id,omitempty"`
	TeamID     string            `json:"team_id,omitempty"`
	Messages   []convMessage     `json:"messages"`
	CreatedAt  time.Time         `json:"created_at"`
	UpdatedAt  time.Time         `json:"updated_at"`
	ResolvedAt *time.Time        `json:"resolved_at"`
	replyKeys  map[string]string // idempotency_key -> message id
}

type convMessage struct {
	ID      string    `json:"id"`
	Author  string    `json:"author"`
	Body    string    `json:"body"`
	Private bool      `json:"private"`
	At      time.Time `json:"created_at"`
}

var convSeeds = []struct{ subject, contact, first string }{
	{"Refund for order #48213", "Maria K.", "Hi, I returned the shoes two weeks ago and still have no refund."},
	{"Cannot log in after password reset", "Tom B.", "The reset link says it expired although I clicked it right away."},
	{"Invoice address wrong", "Acme GmbH", "Please change the billing address on invoice 2024-0193 to our new office."},
	{"Shipping to Switzerland?", "Luca R.", "Do you ship to Switzerland and are customs fees included?"},
}

func genConversations(w *workspace, g *gen) {
	for _, res := range w.resources {
		if !supportKinds[res.Kind] {
			continue
		}
		for i := range 3 {
			seed := convSeeds[(i+g.rng.IntN(len(convSeeds)))%len(convSeeds)]
			at := g.ago(30*time.Minute, 5*24*time.Hour)
			c := &conversation{
				ID: w.newID("cnv"), Resource: res.Name, Provider: res.Kind, Subject: seed.subject, Contact: seed.contact,
				Status: []string{"open", "open", "pending"}[i], CreatedAt: at, UpdatedAt: at, replyKeys: map[string]string{},
				Messages: []convMessage{{ID: w.newID("msg"), Author: "contact:" + seed.contact, Body: seed.first, At: at}},
			}
			w.conversations = append(w.conversations, c)
		}
	}
}

func conversationTools() map[string]tool {
	conv := []string{"resource", "conversation_id"}
	return map[string]tool{
		"conversation.get":     {required: conv, handle: conversationGet},
		"conversation.list":    {required: []string{"resource"}, handle: conversationList},
		"conversation.reply":   {required: slices.Concat(conv, []string{"body"}), handle: conversationReply},
		"conversation.assign":  {required: slices.Concat(conv, []string{"assignee_id"}), handle: conversationAssign},
		"conversation.resolve": {required: conv, handle: conversationResolve},
		"conversation.handoff": {required: slices.Concat(conv, []string{"team_id"}), handle: conversationHandoff},
	}
}

// supportResource checks that name is a support-channel resource of this
// workspace; conversations are addressed through it (no project binding).
func (w *workspace) supportResource(name string) (*resource, error) {
	res := w.resourceByName(name)
	if res == nil {
		return nil, notFound("resource", name)
	}
	if !supportKinds[res.Kind] {
		return nil, refuse("resource %s is a %s resource, not a support channel; use a chatwoot or intercom resource from resources.list", name, res.Kind)
	}
	return res, nil
}

// conversationArg resolves resource + conversation_id.
func (w *workspace) conversationArg(r *request) (*conversation, error) {
	res, err := w.supportResource(r.str("resource"))
	if err != nil {
		return nil, err
	}
	id := r.str("conversation_id")
	c := find(w.conversations, func(c *conversation) bool { return c.ID == id && c.Resource == res.Name })
	if c == nil {
		return nil, refuse("conversation %s not found in resource %s of this workspace", id, res.Name)
	}
	return c, nil
}

func conversationGet(w *workspace, r *request) (any, error) {
	c, err := w.conversationArg(r)
	if err != nil {
		return nil, err
	}
	return map[string]any{"conversation": c}, nil
}

func conversationList(w *workspace, r *request) (any, error) {
	res, err := w.supportResource(r.str("resource"))
	if err != nil {
		return nil, err
	}
	open := filter(w.conversations, r.limit(20, 100), func(c *conversation) bool { return c.Resource == res.Name && c.Status != "resolved" })
	out := list("conversations", open)
	out["resource"], out["provider"] = res.Name, res.Kind
	return out, nil
}

// conversationReply posts once per idempotency_key: a retry with the same
// key returns the first message instead of posting again.
func conversationReply(w *workspace, r *request) (any, error) {
	c, err := w.conversationArg(r)
	if err != nil {
		return nil, err
	}
	key := r.str("idempotency_key")
	if id, seen := c.replyKeys[key]; key != "" && seen {
		m := find(ptrs(c.Messages), func(m *convMessage) bool { return m.ID == id })
		return map[string]any{"conversation_id": c.ID, "message": m, "replayed": true}, nil
	}
	if c.Status == "resolved" {
		return nil, refuse("conversation %s is resolved; the customer would not see a reply", c.ID)
	}
	m := convMessage{ID: w.newID("msg"), Author: "agent:" + actorOr(r.Actor), Body: r.str("body"), Private: r.boolean("private"), At: r.now}
	c.Messages = append(c.Messages, m)
	c.UpdatedAt = r.now
	if key != "" {
		c.replyKeys[key] = m.ID
	}
	return map[string]any{"conversation_id": c.ID, "message": m, "replayed": false}, nil
}

func ptrs[T any](xs []T) []*T {
	out := make([]*T, len(xs))
	for i := range xs {
		out[i] = &xs[i]
	}
	return out
}

func conversationAssign(w *workspace, r *request) (any, error) {
	c, err := w.conversationArg(r)
	if err != nil {
		return nil, err
	}
	previous := c.AssigneeID
	c.AssigneeID, c.UpdatedAt = r.str("assignee_id"), r.now
	return map[string]any{"conversation": c, "previous_assignee_id": previous}, nil
}

// conversationResolve closes a conversation; resolving a resolved one is a
// no-op (replayed true) so retries with an idempotency key are harmless.
func conversationResolve(w *workspace, r *request) (any, error) {
	c, err := w.conversationArg(r)
	if err != nil {
		return nil, err
	}
	if c.Status == "resolved" {
		return map[string]any{"conversation": c, "replayed": true}, nil
	}
	c.Status, c.ResolvedAt, c.UpdatedAt = "resolved", ptr(r.now), r.now
	return map[string]any{"conversation": c, "replayed": false}, nil
}

func conversationHandoff(w *workspace, r *request) (any, error) {
	c, err := w.conversationArg(r)
	if err != nil {
		return nil, err
	}
	c.TeamID, c.AssigneeID, c.UpdatedAt = r.str("team_id"), "", r.now
	if note := r.str("note"); note != "" {
		c.Messages = append(c.Messages, convMessage{ID: w.newID("msg"), Author: "agent:" + actorOr(r.Actor), Body: note, Private: true, At: r.now})
	}
	if c.Status == "resolved" {
		c.Status, c.ResolvedAt = "open", nil
	}
	return map[string]any{"conversation": c, "handed_off_to": c.TeamID}, nil
}
