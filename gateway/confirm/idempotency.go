package confirm

import "time"

// IdempotencyTTL is how long idempotency keys are kept after their task
// reaches a terminal state (docs/requirements.md#deploy-confirmation:
// "cleaned up 24 hours after the parent task reaches a terminal state").
const IdempotencyTTL = 24 * time.Hour
