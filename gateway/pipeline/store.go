package pipeline

import "github.com/mcpgate/mcpgate/gateway/store"

// Store is what the request path needs from the audit store (the
// contract's Calls part); the PostgreSQL and embedded stores implement it.
type Store = store.Calls

// IdempotencyStore is the mcp_idempotency_keys table (the contract's
// Idempotency part), part of Store.
type IdempotencyStore = store.Idempotency
