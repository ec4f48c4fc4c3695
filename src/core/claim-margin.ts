/**
 * A task is claimed only if its timeout fits the remaining budget with this much to spare: the claim's
 * own round trip passes before the first job starts, and a job that no longer fits is only released.
 * The runtime's claims, the handlers' budget warnings and `akadze init`'s comments all read it.
 * @example const fits = timeoutMs <= remainingMs - CLAIM_MARGIN_MS;
 */
export const CLAIM_MARGIN_MS = 1000;
