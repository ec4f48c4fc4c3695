// One job's progress and end as server-sent events, polled from Postgres (no LISTEN, so it works over neon-http and
// on edge runtimes), for a browser's EventSource. A page is let in by a signed per-job token the app mints.
import type { Context, Env, Hono } from "hono";
import { parseDuration, type Duration } from "../core/duration.js";
import { FINISHED_STATES } from "../core/states.js";
import { consoleLog, type LogSink } from "../app/log.js";
import type { Db } from "../db/query.js";
import { readJobProgress, type JobProgressLook } from "../ops/job-progress.js";
import { bearerToken, secretMatches } from "./auth.js";
import { parseRequest, RouteProblem } from "./problems.js";
import { JobIdParam } from "./requests.js";

/** How the event stream of `GET /jobs/:id/events` polls. @example akadzeRoutes(app, { db, secret, events: { pollEvery: "1s" } }) */
export interface JobEventsOptions {
  /** How often the stream reads the job while it changes. Default "500ms", at least 50 ms. */
  pollEvery?: Duration;
  /** The longest pause between reads once nothing changes (it backs off by half each quiet read). Default "5s". */
  maxPollEvery?: Duration;
  /** The stream closes after this long (the browser's EventSource reconnects by itself). Default "25s". */
  maxDuration?: Duration;
  /** The clock a token's expiry is checked against. Default: the system clock. */
  now?: () => Date;
}

export const DEFAULT_EVENTS_POLL = "500ms";
export const DEFAULT_EVENTS_MAX_POLL = "5s";
export const DEFAULT_EVENTS_MAX_DURATION = "25s";
/** A quiet stream sends a comment this often, so proxies do not close it as idle. */
const KEEP_ALIVE_MS = 15_000;

const encoder = new TextEncoder();

function hmacKey(secret: string): Promise<CryptoKey> {
  return crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"]);
}

function tokenMessage(jobId: number, expiresAtSeconds: number) {
  return encoder.encode(`akadze job events ${jobId} ${expiresAtSeconds}`);
}

function base64url(bytes: Uint8Array): string {
  let text = "";
  for (const b of bytes) text += String.fromCharCode(b);
  return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function fromBase64url(text: string) {
  if (!/^[A-Za-z0-9_-]+$/.test(text)) return null;
  const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

/**
 * A token that lets a page (without the routes' secret) open the event stream of job `jobId` until `expiresAt`:
 * an HMAC-SHA256 of the id and the expiry with `secret` (the routes' secret), by Web Crypto, so it can be
 * minted on Workers, Vercel and Node alike. Pass it as `?token=` to `GET /jobs/:id/events`.
 * @example
 * const token = await jobEventsToken(env.CRON_SECRET, id, new Date(Date.now() + 10 * 60_000));
 * // in the page: new EventSource(`/akadze/jobs/${id}/events?token=${token}`)
 */
export async function jobEventsToken(secret: string, jobId: number, expiresAt: Date): Promise<string> {
  const seconds = Math.floor(expiresAt.getTime() / 1000);
  const signature = new Uint8Array(await crypto.subtle.sign("HMAC", await hmacKey(secret), tokenMessage(jobId, seconds)));
  return `${seconds}.${base64url(signature)}`;
}

/** True when `token` was minted by `jobEventsToken` with `secret` for `jobId` and has not expired at `now`. */
export async function jobEventsTokenValid(secret: string, jobId: number, token: string, now: Date): Promise<boolean> {
  const match = /^(\d{1,12})\.([A-Za-z0-9_-]{43})$/.exec(token);
  if (!match) return false;
  const seconds = Number(match[1]);
  if (seconds * 1000 <= now.getTime()) return false;
  const signature = fromBase64url(match[2]);
  if (signature === null) return false;
  // verify compares in constant time.
  return crypto.subtle.verify("HMAC", await hmacKey(secret), signature, tokenMessage(jobId, seconds));
}

/**
 * Adds `GET /jobs/:id/events`: a `text/event-stream` of the job's `state` (`{ state, attempt }`, when it changes),
 * `progress` (`{ progress, at }`, when it changes) and, once it has finished, one `end` event
 * (`{ state, result, error }`) before the stream closes. It reads the job with one statement every `pollEvery`,
 * backing off to `maxPollEvery` while nothing changes, and closes after `maxDuration` (EventSource reconnects,
 * and the new stream starts with the job as it is then). Let in by `?token=` from `jobEventsToken`, or the
 * routes' bearer secret; 404 for an unknown job. Register it before the bearer check. A stream that fails is
 * a line in `log` (akadzeRoutes passes the app's).
 * @example registerJobEventsRoute(routes, getDb, getSecret, { pollEvery: "500ms" });
 */
export function registerJobEventsRoute<E extends Env>(routes: Hono<E>, getDb: (c: Context<E>) => Db | Promise<Db>,
  getSecret: (c: Context<E>) => string | undefined, options: JobEventsOptions = {}, log: LogSink = consoleLog): void {
  const pollMs = Math.max(50, parseDuration(options.pollEvery ?? DEFAULT_EVENTS_POLL, "events.pollEvery"));
  const maxPollMs = Math.max(pollMs, parseDuration(options.maxPollEvery ?? DEFAULT_EVENTS_MAX_POLL, "events.maxPollEvery"));
  const maxDurationMs = parseDuration(options.maxDuration ?? DEFAULT_EVENTS_MAX_DURATION, "events.maxDuration");
  const now = options.now ?? (() => new Date());

  routes.get("/jobs/:id/events", async (c) => {
    const secret = getSecret(c);
    if (!secret) throw new RouteProblem(500, "no_secret", "akadze routes have no secret configured; set one (e.g. CRON_SECRET) so requests can be authorised");
    const id = parseRequest(JobIdParam, c.req.param("id"), "job id");
    const token = c.req.query("token");
    const allowed = token !== undefined
      ? await jobEventsTokenValid(secret, id, token, now())
      : await secretMatches(bearerToken(c.req.header("authorization")), secret);
    if (!allowed) {
      throw new RouteProblem(401, "unauthorized", token !== undefined
        ? `the token does not open job ${id}'s events, or it has expired: mint a new one with jobEventsToken`
        : "give ?token= from jobEventsToken, or an Authorization: Bearer <secret> header");
    }
    const db = await getDb(c);
    const read = () => readJobProgress(db, id);
    const first = await read();
    if (first === null) throw new RouteProblem(404, "not_found", `job ${id} does not exist`);
    // The client leaving shows as the stream cancelled (or, on some runtimes, the request aborted).
    const left = new AbortController();
    c.req.raw.signal?.addEventListener("abort", () => left.abort(), { once: true });
    const stream = new ReadableStream<Uint8Array>({
      start: (controller) => {
        const send = (text: string) => { if (!left.signal.aborted) controller.enqueue(encoder.encode(text)); };
        void watch(first, read, { pollMs, maxPollMs, maxDurationMs, aborted: left.signal }, send).then(() => {
          if (!left.signal.aborted) controller.close();
        }, (error: unknown) => {
          if (left.signal.aborted) return;
          log({ level: "error", message: `the event stream of job ${id} failed`, fields: { jobId: id, error } });
          controller.close();
        });
      },
      cancel: () => left.abort(),
    });
    return new Response(stream, {
      headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache, no-transform", "x-accel-buffering": "no" },
    });
  });
}

/** Sends the job's changes until it ends, the time is up or the client leaves. */
async function watch(first: JobProgressLook, read: () => Promise<JobProgressLook | null>,
  o: { pollMs: number; maxPollMs: number; maxDurationMs: number; aborted: AbortSignal }, send: (text: string) => void): Promise<void> {
  const started = performance.now();
  let lastSent = started;
  const event = (name: string, data: unknown) => {
    send(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
    lastSent = performance.now();
  };
  send("retry: 1000\n\n");
  let state: string | null = null;
  let progress: string | null = null;
  let delay = o.pollMs;
  let look: JobProgressLook | null = first;
  for (;;) {
    if (look === null) {
      event("end", { state: null, result: null, error: "the job is gone: it was pruned" });
      return;
    }
    let changed = false;
    if (look.state !== state) {
      state = look.state;
      event("state", { state: look.state, attempt: look.attempt });
      changed = true;
    }
    const progressText = look.progressAt === null ? null : JSON.stringify(look.progress);
    if (progressText !== progress) {
      progress = progressText;
      event("progress", { progress: look.progress, at: look.progressAt });
      changed = true;
    }
    if ((FINISHED_STATES as readonly string[]).includes(look.state)) {
      event("end", { state: look.state, result: look.result, error: look.error?.message ?? null });
      return;
    }
    const left = o.maxDurationMs - (performance.now() - started);
    if (left <= 0 || o.aborted.aborted) return;
    // While the job changes, look again soon; while it is quiet, less and less often.
    delay = changed ? o.pollMs : Math.min(o.maxPollMs, Math.round(delay * 1.5));
    if (!(await pause(Math.min(delay, left), o.aborted))) return;
    if (performance.now() - lastSent >= KEEP_ALIVE_MS) send(": still watching\n\n");
    look = await read();
  }
}

/** Waits `ms`; false when the client left first. */
function pause(ms: number, aborted: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (aborted.aborted) return resolve(false);
    const onAbort = () => { clearTimeout(timer); resolve(false); };
    const timer = setTimeout(() => { aborted.removeEventListener("abort", onAbort); resolve(true); }, ms);
    aborted.addEventListener("abort", onAbort, { once: true });
  });
}
