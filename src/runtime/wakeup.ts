import type { Db } from "../db/query.js";
import { JOBS_CHANNEL } from "../sql/enqueue.js";
import { Wakeup } from "./signal.js";


/** Wake-ups for a long-lived worker, one per lane: a queue name, or `null` for every queue. */
export interface JobWakeups {
  /** Resolves at the next enqueue into `queue` (or any queue for `null`) since the last call, or after `ms`. */
  wait(queue: string | null, ms: number, signal: AbortSignal): Promise<void>;
  close(): Promise<void>;
}

/**
 * Listens for enqueues where the driver keeps a session: node-postgres and neon-serverless pools (one
 * connection held with LISTEN), PGlite (`listen`). Returns `null` for neon-http (no session) or when
 * LISTEN fails (a pooler in transaction mode): the worker polls as before. A lost listening connection
 * also falls back to polling.
 */
export async function listenForJobs(db: Db, onError: (error: unknown) => void): Promise<JobWakeups | null> {
  const client = (db as any).$client;
  if (!client || typeof client !== "object") return null;
  const lanes = new Map<string | null, Wakeup>();
  const lane = (queue: string | null) => { let w = lanes.get(queue); if (!w) lanes.set(queue, w = new Wakeup()); return w; };
  const notify = (queue: string) => { lane(null).notify(); lanes.get(queue)?.notify(); };
  let stop: () => Promise<void>;
  try {
    if (typeof client.listen === "function" && typeof client.connect !== "function") {
      const unlisten = await client.listen(JOBS_CHANNEL, (payload: string) => notify(payload));
      stop = async () => { await unlisten(); };
    } else if (typeof client.connect === "function" && typeof client.query === "function") {
      const session = await client.connect();
      session.on("notification", (message: { channel: string; payload?: string }) => {
        if (message.channel === JOBS_CHANNEL) notify(message.payload ?? "");
      });
      session.on("error", onError);
      try {
        await session.query(`listen ${JOBS_CHANNEL}`);
      } catch (error) {
        session.release?.(error);
        throw error;
      }
      stop = async () => {
        await session.query(`unlisten ${JOBS_CHANNEL}`).catch(() => {});
        session.removeAllListeners?.("notification");
        session.release?.(true); // closed, not pooled: a listening session is not handed to a query
      };
    } else return null;
  } catch (error) {
    onError(error);
    return null;
  }
  return {
    wait: (queue, ms, signal) => lane(queue).wait(ms, signal),
    close: () => stop(),
  };
}
