// How long an engine waits before it tries a failed statement again: a claim that failed, or outcomes whose
// settle went unanswered. The engine (claims) and its job runs (settles) both back off by it.

/** The first wait: doubles on each failure in a row... */
export const RETRY_MIN_MS = 50;
/** ...up to this. */
export const RETRY_MAX_MS = 1_000;
