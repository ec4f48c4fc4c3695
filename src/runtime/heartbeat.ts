import { queryJsonWithin } from "./timed-query.js";
import type { SQL } from "drizzle-orm";
import { Cancel, LeaseLost } from "../core/errors.js";
import { queryJsonPrepared, type Db } from "../db/query.js";
import { heartbeatStatement, type BeatAnswer, type HeldJob } from "../sql/claim/heartbeat.js";
import type { JobAbort } from "./signal.js";

/**
 * Renews the engine's lease (its owner row, which every job it holds shares: running or prefetched) in one
 * statement every `intervalMs`, and tells the caller which jobs must stop (cancel requested, expired), which
 * leases were lost to another invocation, and whether jobs it did not name are leased to it. An answer judges only the jobs its statement covered: a job claimed while
 * the beat was on its way is not in it and is not taken for lost.
 */
export class Heartbeat {
  private timer: ReturnType<typeof setInterval> | undefined;
  private inFlight = false;

  constructor(
    private readonly options: {
      db: Db; owner: string; leaseMs: number; intervalMs: number; now: () => SQL;
      /** How long to wait for a beat's answer (Infinity: as long as it takes). */
      requestTimeoutMs: () => number;
      /** The jobs held now, with the controller of each. */
      held: () => ReadonlyMap<number, JobAbort>;
      count: () => void;
      /**
       * `covered`: the jobs the beat was sent for, as held then; `held`: those the database still leases to this
       * owner; `unnamed`: how many other jobs it leases to this owner (claimed meanwhile, or forgotten).
       */
      onBeat: (covered: ReadonlyMap<number, JobAbort>, held: HeldJob[], unnamed: number) => void;
    },
  ) {}

  start(): void {
    this.timer ??= setInterval(() => void this.beat(), this.options.intervalMs);
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One beat; a failed beat is skipped, the lease outlives several intervals. */
  async beat(): Promise<void> {
    if (this.inFlight || this.options.held().size === 0) return;
    const covered = new Map(this.options.held());
    this.inFlight = true;
    try {
      const { db, owner, now, leaseMs } = this.options;
      this.options.count();
      const answer = await queryJsonWithin<BeatAnswer>(db, heartbeatStatement(owner, now(), leaseMs, [...covered.keys()]),
        this.options.requestTimeoutMs(), "a heartbeat");
      if (this.timer !== undefined) {
        this.options.onBeat(covered, answer.held.map((h) => ({ id: Number(h.id), stop: h.stop })), Number(answer.unnamed));
      }
    } catch {
      // The next beat tries again; leases last three intervals.
    } finally {
      this.inFlight = false;
    }
  }
}

/**
 * What a heartbeat answer means for the bodies it covered (and only those, as they were held when it was
 * sent: a job claimed again meanwhile is a new lease the answer knows nothing of): a job no longer held is
 * aborted with LeaseLost; one whose cancel was requested (or that expired) is aborted with Cancel (a job not started yet then never starts).
 */
export function judgeBeat(covered: ReadonlyMap<number, JobAbort>, held: { id: number; stop: boolean }[], controllerOf: (id: number) => JobAbort | undefined): void {
  const seen = new Map(held.map((h) => [h.id, h.stop]));
  for (const [id, sent] of covered) {
    const controller = controllerOf(id);
    if (!controller || controller !== sent) continue;
    if (!seen.has(id)) controller.abort(new LeaseLost(`the lease of job ${id} was lost to another invocation`));
    else if (seen.get(id)) controller.abort(new Cancel(`job ${id} was cancelled or expired while running`));
  }
}
