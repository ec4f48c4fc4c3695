// The Vercel side: a Web handler (Node.js runtime) that hands requests to a Hono app.
import type { ExecutionContext } from "hono";

interface FetchApp<E> { fetch(request: Request, env?: E, ctx?: ExecutionContext): Response | Promise<Response> }
/** The second argument Vercel gives a Web handler outside Next.js. */
export interface VercelContext { waitUntil?(promise: Promise<unknown>): void }

// Where Vercel's runtime publishes the current request's context (what @vercel/functions reads).
const REQUEST_CONTEXT = Symbol.for("@vercel/request-context");

/**
 * `GET`/`POST` exports for a Vercel function: `env` becomes the app's `c.env`, Vercel's `waitUntil`
 * its `c.executionCtx.waitUntil`.
 * @example export const { GET, POST } = vercelHandlers(web, () => process.env);
 */
export function vercelHandlers<E>(app: FetchApp<E>, env: () => E) {
  const handle = (request: Request, context?: VercelContext) => app.fetch(request, env(), executionContext(context));
  return { GET: handle, POST: handle };
}

function executionContext(context: VercelContext | undefined): ExecutionContext {
  const waitUntil = context?.waitUntil?.bind(context)
    ?? (globalThis as any)[REQUEST_CONTEXT]?.get?.()?.waitUntil
    // Outside Vercel (tests, `vercel dev` without it) the promise runs on by itself.
    ?? ((promise: Promise<unknown>) => { promise.catch(() => {}); });
  return { waitUntil, passThroughOnException() {}, props: {} };
}
