import type { Db } from "../db/query.js";
import { clientOf, traitsOf } from "../db/traits.js";
import { JOBS_CHANNEL } from "../sql/enqueue/enqueue.js";
import { Wakeup } from "./signal.js";
import { AkadzeError } from "../core/errors.js";


/** Wake-ups for a long-lived worker, one per lane: a queue name, or `null` for every queue. */
export interface JobWakeups {
  /**
   * Resolves at the next enqueue into `queue` (or any queue for `null`) since the last call (true), or after
   * `ms` or the signal's abort (false). The first call for a queue resolves true at once (see `lane`).
   */
  wait(queue: string | null, ms: number, signal: AbortSignal): Promise<boolean>;
  close(): Promise<void>;
}

/** The wait before listening again after the listening connection died: doubles from the first to the second. */
const RELISTEN_MIN_MS = 100;
const RELISTEN_MAX_MS = 5_000;

/**
 * Listens for enqueues where the driver keeps a session: node-postgres and neon-serverless pools (one
 * connection held with LISTEN), PGlite (`listen`). Returns `null` for neon-http (no session), when LISTEN
 * fails (a pooler in transaction mode), or when the pool has a single connection (LISTEN would hold the one
 * the worker's statements need): the worker polls as before. A listening connection that dies is replaced
 * (polling covers the gap, and every lane looks once it listens again).
 */
export async function listenForJobs(db: Db, onError: (error: unknown) => void): Promise<JobWakeups | null> {
  const { listen, poolMax } = traitsOf(db);
  if (listen === null) return null;
  const client = clientOf(db);
  const lanes = new Map<string | null, Wakeup>();
  // A lane's first wait ends at once: its claims so far may have gone out before the LISTEN, and enqueues then were
  // not heard (as after a LISTEN lost and made again, below).
  const lane = (queue: string | null) => {
    let w = lanes.get(queue);
    if (!w) { lanes.set(queue, w = new Wakeup()); w.notify(); }
    return w;
  };
  const notify = (queue: string) => { lane(null).notify(); lanes.get(queue)?.notify(); };
  let stop: () => Promise<void>;
  try {
    if (listen === "client") {
      const unlisten = await client.listen(JOBS_CHANNEL, (payload: string) => notify(payload));
      stop = async () => { await unlisten(); };
    } else {
      if (poolMax !== null && poolMax < 2) {
        onError(new AkadzeError(`the pool has ${poolMax} connection: LISTEN would hold the only one, so the worker polls for enqueues instead (give the pool max >= 2 to wake on enqueue)`));
        return null;
      }
      let closed = false;
      /** The listening session, and what takes this module's handlers off it. */
      let session: { client: any; detach: () => void } | null = null;
      let retry: ReturnType<typeof setTimeout> | undefined;
      let backoff = RELISTEN_MIN_MS;
      const open = async (): Promise<void> => {
        const s = await client.connect();
        const lost = (error?: unknown) => {
          if (session?.client !== s) return;
          session = null;
          if (error) onError(error);
          s.release?.(error instanceof Error ? error : true);
          if (!closed) relisten();
        };
        const heard = (message: { channel: string; payload?: string }) => {
          if (message.channel === JOBS_CHANNEL) notify(message.payload ?? "");
        };
        s.on("notification", heard);
        s.on("error", lost);
        s.on("end", lost);
        try {
          await s.query(`listen ${JOBS_CHANNEL}`);
        } catch (error) {
          s.release?.(error);
          throw error;
        }
        session = { client: s, detach: () => {
          s.removeListener("notification", heard);
          s.removeListener("error", lost);
          s.removeListener("end", lost);
        } };
      };
      const relisten = () => {
        retry = setTimeout(() => {
          retry = undefined;
          open().then(() => {
            backoff = RELISTEN_MIN_MS;
            // Enqueues while nobody listened were not heard: every lane looks now.
            for (const w of lanes.values()) w.notify();
          }, (error) => {
            onError(error);
            backoff = Math.min(RELISTEN_MAX_MS, backoff * 2);
            if (!closed) relisten();
          });
        }, backoff);
      };
      await open();
      stop = async () => {
        closed = true;
        clearTimeout(retry);
        const current = session;
        session = null;
        if (!current) return;
        const unlistened = await current.client.query(`unlisten ${JOBS_CHANNEL}`).then(() => true, () => false);
        current.detach();
        // Unlistened, it is an idle session again and goes back to the pool, its prepared statements warm for the
        // next worker on it (closed, it made that worker open a connection and prepare its statements anew;
        // graphile-worker's runner hands its listener back too). One whose UNLISTEN failed may still listen: closed.
        current.client.release?.(unlistened ? undefined : true);
      };
    }
  } catch (error) {
    onError(error);
    return null;
  }
  return {
    wait: (queue, ms, signal) => lane(queue).wait(ms, signal),
    close: () => stop(),
  };
}
