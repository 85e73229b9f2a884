package admin

import "github.com/mcpgate/mcpgate/gateway/store"

// Store is what the admin API needs from the audit store: the contract's
// Admin part (gateway/store.Admin says what each method does and returns).
type Store = store.Admin
