import type { StoredStep } from "../sql/workflow/load-steps.js";

/**
 * What a run's earlier runs stored, as the run loaded it: the steps by name and by position, the `patched`
 * markers, and the version the run started on. Kept apart from the steps a run stores as it goes.
 */
export class Journal {
  /** The stored steps, by name. */
  readonly steps = new Map<string, StoredStep>();
  /** The stored steps, by position. */
  readonly bySeq = new Map<number, StoredStep>();
  /** The `patched` markers, by stored name (`patch:<id>`). */
  readonly patches = new Map<string, StoredStep>();
  /** The furthest position of a stored step (-1: none): the run went past every point before it without what is new there. */
  furthestSeq = -1;
  /** The version the run started on, as recorded (null: none recorded). */
  startedVersion: number | null = null;

  /** Takes in rows as `loadStepsStatement` answers them (a later read of the same run overwrites by name). */
  add(rows: readonly StoredStep[]): void {
    for (const row of rows) {
      if (row.kind === "version") this.startedVersion = Number(row.result);
      else if (row.kind === "patch") this.patches.set(row.name, row);
      else { this.steps.set(row.name, row); this.bySeq.set(row.seq, row); this.furthestSeq = Math.max(this.furthestSeq, row.seq); }
    }
  }

  /**
   * The version the run started on: the one recorded; 1 for a run that stored steps before its workflow
   * declared versions (a workflow without `version` is version 1); `current` for a run that starts now.
   */
  startedOn(current: number): number {
    if (this.startedVersion !== null) return this.startedVersion;
    return this.steps.size + this.patches.size > 0 ? 1 : current;
  }
}
