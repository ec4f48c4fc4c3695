import type { ClaimedJob } from "../sql/claim.js";

/** How a prefetched job stands in the local queue. */
export type LocalState = "waiting" | "requested" | "ready";

export interface LocalJob {
  job: ClaimedJob;
  state: LocalState;
  /** A job that took a `maxStarts` token must start by then (local clock and monotonic ms), or be released. */
  startBy?: { clock: number; mono: number };
}

/**
 * The waiting jobs to ask the next statement to start: enough for the free slots (after the jobs already
 * started and waiting for a slot) plus `lookahead` more that would start within one round trip. A limited
 * job is asked for only into a free slot: its `maxStarts` token is stamped when it is started.
 */
export function pickStarts(queue: LocalJob[], freeSlots: number, lookahead: number): LocalJob[] {
  let ready = 0;
  for (const l of queue) if (l.state === "ready") ready++;
  const free = freeSlots - ready;
  let want = free + lookahead;
  let limitedWant = free;
  const next: LocalJob[] = [];
  for (const l of queue) {
    if (want <= 0) break;
    if (l.state !== "waiting" || (l.job.limited && limitedWant <= 0)) continue;
    if (l.job.limited) limitedWant--;
    want--;
    next.push(l);
  }
  return next;
}
