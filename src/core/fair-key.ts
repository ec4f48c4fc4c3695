/**
 * Two-level fairness keys (docs/flow-control.md#fairness): a tenant and, optionally, a sub-key within it, stored
 * in one text column as `tenant \x01 sub-key`, so a tenant's keys are one range of a byte-ordered index
 * (`\x02` sorts right after the separator and ends it; sql/claim/fair.ts walks it).
 */

/** What separates a tenant from its sub-key in the stored key; `\x02` sorts right after it and ends a tenant's range. */
const SUB_KEY_SEPARATOR = "\u0001";

/** The `fair_key` a job is stored with: the tenant alone, or `tenant \x01 sub-key`. @example storedFairKey("acme", "repo-7") */
export function storedFairKey(key: string | null, subKey: string | null): string | null {
  if (key === null) return null;
  return subKey === null ? key : `${key}${SUB_KEY_SEPARATOR}${subKey}`;
}

/** A stored `fair_key` as the tenant and sub-key it was enqueued with. @example splitFairKey("acme\u0001repo-7") // { fairKey: "acme", fairSubKey: "repo-7" } */
export function splitFairKey(stored: string | null): { fairKey: string | null; fairSubKey: string | null } {
  if (stored === null) return { fairKey: null, fairSubKey: null };
  const at = stored.indexOf(SUB_KEY_SEPARATOR);
  return at < 0 ? { fairKey: stored, fairSubKey: null } : { fairKey: stored.slice(0, at), fairSubKey: stored.slice(at + 1) };
}

/** A problem with a fairness key or sub-key (they cannot hold the separator characters), or null. */
export function fairKeyProblem(name: string): string | null {
  return /[\u0001\u0002]/.test(name) ? "must not contain the control characters \\u0001 or \\u0002 (they separate a tenant from its sub-key)" : null;
}

