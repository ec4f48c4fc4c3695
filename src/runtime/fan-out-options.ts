// What fan-out is configured with and what it reports: the contract of `runOnce`'s `fanOut` option, apart from
// its machinery (fan-out.ts).
import type { TraceCarrier } from "../core/tracing.js";

/**
 * Invocations live at once across the cluster unless told: each holds a connection or two and sends a claim
 * every batch, so 8 claimers are where the scale-out bench still gains from each one added on a small
 * Postgres; 8 invocations of 8 slots run 64 jobs at once, more than most APIs a job calls let one client run.
 * @example runOnce(app, { db, fanOut: { invoke, maxInvocations: DEFAULT_MAX_INVOCATIONS * 2 } })
 */
export const DEFAULT_MAX_INVOCATIONS = 8;
/** The widest fan-out accepted: Cloudflare refuses a Worker chain deeper than 16, and every invocation is one more claimer. */
export const MAX_INVOCATIONS = 64;
/** The most due jobs one claim counts for fan-out (rounded up to a power of two, 16,384): the count stays a bounded index scan whatever the queue holds. */
export const MAX_BACKLOG_COUNT = 10_000;

/** One invocation fan-out asks the platform to start: its name, chain and shape; the adapter sends it to the work route. */
export interface SiblingRequest {
  /** The new invocation's id: its slot is held in this name, and it must run under it. */
  id: string;
  /** Started beside its starter (`sibling`) or after it, with its slot (`successor`). */
  kind: "sibling" | "successor";
  /** The id of the first invocation of the chain (the cron tick). */
  chain: string;
  /** Budgets since the tick: the tick and the siblings it starts are 0, each successor one more. */
  generation: number;
  startedBy: string;
  queues?: string[];
  slots: number;
  batchSize: number;
  /** The invocation's budget in milliseconds (the same as its starter's). */
  budgetMs: number;
  /** The starter's trace context, when its app traces: the new invocation's span links to it. */
  trace?: TraceCarrier;
}

/** What an invocation started by fan-out was given: its chain (its id is `runOnce`'s `id`). */
export interface FanOutTicket {
  chain: string;
  generation: number;
  /** The starter's trace context (SiblingRequest.trace). */
  trace?: TraceCarrier;
}

/** `runOnce`'s `fanOut` option. @example runOnce(app, { db, fanOut: { invoke: ownUrl(url, { secret }), maxInvocations: 8 } }) */
export interface FanOutOptions {
  /**
   * Starts one invocation for `request` (see the adapters in akadze/hono: `selfBinding`, `ownUrl`), or runs it
   * any way you like: `runOnce(app, { ..., id: request.id, fanOut: { ...options, ticket } })`. The invocation
   * must take its slot (runOnce's first statement does) within a few seconds (at most what is left of the
   * starter's budget): `signal` aborts then if the call is still on its way, and a slot not taken by then, or
   * after a rejection, is freed.
   */
  invoke: (request: SiblingRequest, call: { signal: AbortSignal }) => Promise<unknown>;
  /** Live invocations across the cluster (per set of queues), this one included. Default `DEFAULT_MAX_INVOCATIONS` (8). */
  maxInvocations?: number;
  /**
   * Keeps the process alive for what `invoke` returned (Cloudflare's `ctx.waitUntil`: a service-binding call
   * must be awaited by its caller). Without it, `runOnce` waits for every `invoke` before it returns, but not
   * past its budget (a successor's: past its start deadline).
   */
  waitUntil?: (promise: Promise<unknown>) => void;
  /** Set when fan-out started this invocation (the work route does it from the request). */
  ticket?: FanOutTicket;
}

/** What fan-out did in one invocation, in its summary. */
export interface FanOutReport {
  /** The slot it held, or null: a sibling whose slot was gone, or a tick that found every slot taken, ran nothing. */
  slot: number | null;
  chain: string;
  generation: number;
  /** Due jobs its first claim counted (bounded), or null if it claimed nothing. */
  backlog: number | null;
  /** Siblings it started. */
  started: string[];
  /** The successor it handed its slot to, if its budget ended with work due. */
  successor: string | null;
}
