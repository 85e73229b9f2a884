package confirm

import "time"

// IdempotencyTTL is how long idempotency keys are kept after their task
// reaches a terminal state (seed 001, Deploy confirmation protocol:
// "cleaned up 24 hours after the parent task reaches a terminal state").
const IdempotencyTTL = 24 * time.Hour
