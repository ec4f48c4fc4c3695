/** A clock tests move by hand: pass `clock.now` as `now`/`clock` instead of sleeping. */
export class ManualClock {
  private ms: number;
  constructor(start: Date | string = "2026-06-01T12:00:00Z") { this.ms = new Date(start).getTime(); }
  now = (): Date => new Date(this.ms);
  advance(ms: number): Date { this.ms += ms; return this.now(); }
  set(at: Date | string): Date { this.ms = new Date(at).getTime(); return this.now(); }
}
