import type { ClaimedJob } from "../sql/claim.js";

/** How a prefetched job stands in the local queue. */
export type LocalState = "waiting" | "requested" | "ready";

export interface LocalJob {
  job: ClaimedJob;
  state: LocalState;
  /** A job that took a `maxStarts` token must start by then (local clock and monotonic ms), or be released. */
  startBy?: { clock: number; mono: number };
}

/** A job not waiting for a start request's answer: one that is may be back in the queue table when it comes. */
export const notRequested = (l: LocalJob): boolean => l.state !== "requested";

/**
 * The jobs an engine holds and has not started, in claim order, with a count per state, so that the engine's
 * every look costs what it takes, not the length of the queue (a lane may hold thousands of quick jobs).
 */
export class LocalQueue {
  private jobs: LocalJob[] = [];
  private readonly counts: Record<LocalState, number> = { waiting: 0, requested: 0, ready: 0 };

  get length(): number { return this.jobs.length; }

  push(job: ClaimedJob, state: LocalState): void {
    this.jobs.push({ job, state });
    this.counts[state]++;
  }

  /** Removes and returns the jobs `drop` picks (one pass over the queue). */
  removeWhere(drop: (local: LocalJob) => boolean): LocalJob[] {
    const dropped: LocalJob[] = [];
    this.jobs = this.jobs.filter((l) => {
      if (!drop(l)) return true;
      this.counts[l.state]--;
      dropped.push(l);
      return false;
    });
    return dropped;
  }

  /**
   * Removes and returns the first job marked started, or undefined: in claim order, so none before a job
   * whose start answer is on its way (a later claim's jobs, started by the claim itself, would overtake it).
   */
  takeReady(): LocalJob | undefined {
    if (this.counts.ready === 0) return undefined;
    // Jobs are marked started in claim order, so the first ready one is nearly always at the front.
    let i = 0;
    for (; i < this.jobs.length; i++) {
      const state = this.jobs[i].state;
      if (state === "ready") break;
      if (state === "requested") return undefined;
    }
    if (i === this.jobs.length) return undefined;
    const [local] = i === 0 ? [this.jobs.shift()!] : this.jobs.splice(i, 1);
    this.counts.ready--;
    return local;
  }

  /**
   * The waiting jobs to ask the next statement to start, now marked requested: enough for the free slots
   * (after the jobs already started and waiting for a slot) plus `lookahead` more that would start within
   * one round trip. A limited job is asked for only into a free slot: its `maxStarts` token is stamped when
   * it is started.
   */
  pickStarts(freeSlots: number, lookahead: number): LocalJob[] {
    if (this.counts.waiting === 0) return [];
    const free = freeSlots - this.counts.ready;
    let want = free + lookahead;
    let limitedWant = free;
    const next: LocalJob[] = [];
    for (const l of this.jobs) {
      if (want <= 0) break;
      if (l.state !== "waiting" || (l.job.limited && limitedWant <= 0)) continue;
      if (l.job.limited) limitedWant--;
      want--;
      next.push(l);
    }
    for (const l of next) this.mark(l, "requested");
    return next;
  }

  /**
   * Applies a start answer to the requested jobs among `ids`: those `started` become ready (and `startBy`
   * is called for their deadline); the others are removed and returned.
   */
  answerStarts(ids: number[], started: Set<number>, startBy: (id: number) => LocalJob["startBy"]): LocalJob[] {
    if (this.counts.requested === 0) return [];
    const asked = new Set(ids);
    const gone = this.removeWhere((l) => l.state === "requested" && asked.has(l.job.id) && !started.has(l.job.id));
    for (const l of this.jobs) {
      if (l.state !== "requested" || !asked.has(l.job.id)) continue;
      this.mark(l, "ready");
      const by = startBy(l.job.id);
      if (by !== undefined) l.startBy = by;
    }
    return gone;
  }

  private mark(l: LocalJob, state: LocalState): void {
    this.counts[l.state]--;
    l.state = state;
    this.counts[state]++;
  }
}
