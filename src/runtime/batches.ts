import { outcomesOf, type BatchJob } from "../app/batch.js";
import type { TaskDefinition } from "../app/task.js";
import type { EngineContext } from "./engine-context.js";
import { outsideCurrentJob } from "./context.js";
import { deadline, type Deadline } from "./deadline.js";

/**
 * What an engine's batches read of it: its budget, whether it may still start more jobs of a task soon (it holds
 * some unstarted, or may claim or be woken: `engine.batchMayGrow`), and the wake-up told when a batch gave back its slot.
 */
export type BatchesContext = Pick<EngineContext, "budget" | "engine" | "change">;

interface Member { job: BatchJob; resolve: (value: unknown) => void; reject: (error: unknown) => void }

/**
 * The jobs of one batch task gathered for one handler call. A job enters when its run starts (so the batch
 * counts it before its body joins, after the args check and beforeRun hooks), and joins or leaves.
 */
interface Batch {
  readonly task: TaskDefinition;
  /** Started, not yet joined nor left. */
  readonly entered: Set<number>;
  readonly members: Member[];
  /** The handler was called (or is due): no job enters any more. */
  closed: boolean;
  /** Its longest wait has passed. */
  due: boolean;
  /** Handler calls running: the batch's own, and one per job that joined after it closed. */
  calls: number;
  /** Its jobs whose runs have not ended (a run past its timeout ends when its grace has passed: job-runs.ts). */
  alive: number;
  wait: Deadline;
  /** Its slot was given back. */
  released: boolean;
}

/** A started job's place in a batch: its body joins through it (execute.ts), and its run's end leaves it. */
export interface BatchTicket { readonly batch: Batch; readonly id: number }

/**
 * An engine's batch tasks' batches (docs/batches.md). Jobs are claimed, started, heartbeated and settled one by
 * one as any job; only the handler call is shared: a batch takes the started jobs of its task until it holds
 * `maxBatch`, its longest wait has passed, or the engine will start no more of them, then calls the handler once
 * and hands each job its own outcome. A batch holds one of the engine's slots from its first job to the end of
 * its call.
 */
export class Batches {
  /** The batch each batch task is filling now. */
  private readonly fillingByTask = new Map<string, Batch>();
  private held = 0;

  constructor(private readonly o: BatchesContext) {}

  /** Slots the batches hold (one each, filling or running). */
  get slotsHeld(): number { return this.held; }

  /** Jobs the filling batches still take: what a start request may ask for beyond the free slots. */
  get room(): number {
    let room = 0;
    for (const b of this.fillingByTask.values()) room += b.task.batch!.maxBatch - b.entered.size - b.members.length;
    return room;
  }

  /** Whether any batch is filling. */
  get filling(): boolean { return this.fillingByTask.size > 0; }

  /** Whether a job of `task` started now would join a filling batch (and so take no slot of its own). */
  takes(task: string): boolean {
    return this.fillingByTask.has(task);
  }

  /** A job of a batch task starts (`timeoutMs`: its own): its place, in the filling batch or a new one. */
  enter(task: TaskDefinition, id: number, timeoutMs: number): BatchTicket {
    let batch = this.fillingByTask.get(task.name);
    if (!batch) {
      // The wait leaves the handler at least half the first job's timeout (its invocation's budget if it declares none).
      const wait = deadline(this.o.budget, this.o.budget.mark(), Math.min(task.batch!.maxWaitMs, timeoutMs / 2));
      const b: Batch = { task, entered: new Set(), members: [], closed: false, due: false, calls: 0, alive: 0, wait, released: false };
      void wait.passed.then(() => { b.due = true; this.consider(b); });
      batch = b;
      this.fillingByTask.set(task.name, batch);
      this.held++;
    }
    batch.entered.add(id);
    batch.alive++;
    if (batch.entered.size + batch.members.length >= task.batch!.maxBatch) this.fillingByTask.delete(task.name);
    return { batch, id };
  }

  /** The job's body: resolves to its result or rejects with its error once its batch's handler call answered. */
  join(ticket: BatchTicket, job: BatchJob, signal: { aborted: boolean; reason: unknown }): Promise<unknown> {
    const { batch } = ticket;
    if (!batch.entered.delete(ticket.id)) return Promise.reject(new Error(`job ${ticket.id} joined its batch twice`));
    // Its outcome is decided already (a timeout or cancel while its hooks ran): it takes no part.
    if (signal.aborted) {
      this.consider(batch);
      return Promise.reject(signal.reason);
    }
    return new Promise((resolve, reject) => {
      const member = { job, resolve, reject };
      // (A batch is called only once every job that entered it has joined or left: a safeguard.)
      if (batch.closed) this.call(batch, [member]);
      else {
        batch.members.push(member);
        this.consider(batch);
      }
    });
  }

  /** The job's run ended (if it never joined, as when its args no longer matched or a hook threw, its place is given up). */
  leave(ticket: BatchTicket): void {
    ticket.batch.alive--;
    ticket.batch.entered.delete(ticket.id);
    this.consider(ticket.batch);
  }

  /** Looks at every filling batch again (the engine's state changed: it may start no more of a task). */
  review(): void {
    if (this.fillingByTask.size === 0) return;
    for (const batch of [...this.fillingByTask.values()]) this.consider(batch);
  }

  /** Calls the batch's handler if it should be called now; gives its slot back if nothing is left of it. */
  private consider(batch: Batch): void {
    if (batch.closed) return this.release(batch);
    if (batch.entered.size > 0) return; // a job on its way in: it is waited for (its hooks run inside its timeout)
    if (batch.members.length === 0) { // every job left before joining
      this.close(batch);
      return this.release(batch);
    }
    // Full: it holds maxBatch jobs, or held them when they entered (no job enters it any more).
    const full = batch.members.length >= batch.task.batch!.maxBatch || this.fillingByTask.get(batch.task.name) !== batch;
    if (full || batch.due || !this.o.engine.batchMayGrow(batch.task.name)) {
      this.close(batch);
      this.call(batch, batch.members);
    }
  }

  /** No job enters the batch any more (its slot is given back once its call ends: `release`). */
  private close(batch: Batch): void {
    batch.closed = true;
    batch.wait.cancel();
    if (this.fillingByTask.get(batch.task.name) === batch) this.fillingByTask.delete(batch.task.name);
  }

  /**
   * Gives the batch's slot back once it is closed and nothing of it runs or is on its way: its calls ended, or
   * (a call that ignores its jobs' timeouts) every job's run ended, abandoning the call as a plain job's body is.
   */
  private release(batch: Batch): void {
    if (!batch.closed || (batch.calls > 0 && batch.alive > 0) || batch.entered.size > 0 || batch.released) return;
    batch.released = true;
    this.held--;
    this.o.change.notify();
  }

  /** One call of the handler for `members`, outside any one job's `current()`; each member gets its own outcome. */
  private call(batch: Batch, members: Member[]): void {
    batch.calls++;
    const jobs = members.map((m) => m.job);
    let answer: Promise<unknown>;
    try {
      answer = Promise.resolve(outsideCurrentJob(() => batch.task.batch!.handler(jobs)));
    } catch (error) {
      answer = Promise.reject(error);
    }
    // The slot is given back before any job's outcome moves on, so the engine never counts it twice.
    const ended = () => { batch.calls--; this.release(batch); };
    answer.then((returned) => {
      ended();
      const outcomes = outcomesOf(batch.task.name, jobs, returned);
      members.forEach((m, i) => { const o = outcomes[i]; if ("result" in o) m.resolve(o.result); else m.reject(o.error); });
    }, (error) => {
      ended();
      for (const m of members) m.reject(error);
    });
  }
}
