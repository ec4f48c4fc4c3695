import { queryJson, type Db } from "../db/driver.js";
import { heartbeatStatement, type HeldJob } from "../sql/heartbeat.js";

/**
 * Extends all of an invocation's leases in one statement every `intervalMs`, and tells the caller
 * which jobs must stop (cancel requested, expired) and which leases were lost to another invocation.
 */
export class Heartbeat {
  private timer: ReturnType<typeof setInterval> | undefined;
  private inFlight = false;

  constructor(
    private readonly options: {
      db: Db; owner: string; leaseMs: number; intervalMs: number; now: () => Date;
      count: () => void;
      onBeat: (held: HeldJob[]) => void;
    },
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.beat(), this.options.intervalMs);
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One beat; a failed beat is skipped, the lease outlives several intervals. */
  async beat(): Promise<void> {
    if (this.inFlight) return;
    this.inFlight = true;
    try {
      const { db, owner, now, leaseMs } = this.options;
      this.options.count();
      const held = await queryJson<HeldJob[]>(db, heartbeatStatement(owner, now(), leaseMs));
      if (this.timer !== undefined) this.options.onBeat(held.map((h) => ({ id: Number(h.id), stop: h.stop })));
    } catch {
      // The next beat tries again; leases last three intervals.
    } finally {
      this.inFlight = false;
    }
  }
}
